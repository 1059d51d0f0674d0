#!/usr/bin/env python3
"""Writes a Codex CLI rollout of N entries (default 1,000) and two hook
inputs (auto: denied, a web search result every 40 entries is untrusted and
nothing re-grounds after the last one; manual: allowed under the default
policy's manual override).
Usage: make-codex-rollout.py OUTDIR [N]"""
import json, os, sys

out = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
os.makedirs(out, exist_ok=True)
path = os.path.join(out, "rollout.jsonl")
sid = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
with open(path, "w") as f:
    def w(kind, payload):
        f.write(json.dumps({"timestamp": "2026-11-30T10:00:00.000Z", "type": kind, "payload": payload}) + "\n")
    w("session_meta", {"id": sid, "cwd": out, "originator": "codex_cli_rs", "cli_version": "0.171.0"})
    for i in range(n):
        k = i % 4
        if k == 0:
            w("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"step {i}: please continue"}]})
        elif k == 1:
            if i % 40 == 1:
                w("response_item", {"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "cargo test flaky"}})
            else:
                w("response_item", {"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"cargo\",\"test\"]}", "call_id": f"call_{i}"})
        elif k == 2:
            w("response_item", {"type": "function_call_output", "call_id": f"call_{i-1}", "output": "test result: ok. " + "x" * 200})
        else:
            w("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "All green. " + "y" * 200}]})
    # the last untrusted entry comes after the last user message
    w("response_item", {"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "latest"}})
for trig in ("auto", "manual"):
    with open(os.path.join(out, f"codex-{trig}.json"), "w") as f:
        json.dump({"session_id": sid, "turn_id": "turn-1", "transcript_path": path, "cwd": out, "hook_event_name": "PreCompact", "model": "gpt-5-codex", "trigger": trig}, f)
print(path)
