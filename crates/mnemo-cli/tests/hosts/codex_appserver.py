"""Drives `codex app-server` (JSON-RPC 2.0, one JSON object a line on
stdio) through a script of steps, and records what happened.

Usage: codex_appserver.py CODEX_BIN WORKDIR STEPS_JSON OUT_JSON

STEPS_JSON is a list of steps, each one of:
  {"turn": "text"}                 turn/start with that user text
  {"compact": true}                thread/compact/start
  {"write": [path, text]}          write a file (e.g. switch the policy)
Each step waits for its `turn/completed` notification (or 90 s). OUT_JSON
gets `hooks/list` as Codex sees it (trust status, current hashes), the
thread id, and per step the notifications it saw (method + params) and
its response."""
import json
import os
import queue
import subprocess
import sys
import threading
import time

codex, workdir, steps_file, out_file = sys.argv[1:5]
steps = json.load(open(steps_file))
proc = subprocess.Popen([codex, "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=open(os.path.join(workdir, "app-server.stderr"), "w"), text=True, cwd=workdir)
inbox = queue.Queue()


def reader():
    for line in proc.stdout:
        try:
            inbox.put(json.loads(line))
        except ValueError:
            pass
    inbox.put(None)


threading.Thread(target=reader, daemon=True).start()
next_id = [0]


def send(method, params):
    next_id[0] += 1
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": next_id[0], "method": method, "params": params}) + "\n")
    proc.stdin.flush()
    return next_id[0]


def wait(req_id, until_turn_completed, timeout=90):
    seen, response = [], None
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            msg = inbox.get(timeout=0.5)
        except queue.Empty:
            continue
        if msg is None:
            break
        if "method" in msg and "id" in msg:
            # A server request (approval): decline.
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"decision": "decline"}}) + "\n")
            proc.stdin.flush()
            seen.append({"method": msg["method"], "params": msg.get("params"), "request": True})
            continue
        if "method" in msg:
            seen.append({"method": msg["method"], "params": msg.get("params")})
            if until_turn_completed and msg["method"] == "turn/completed":
                return seen, response
            continue
        if msg.get("id") == req_id:
            response = msg
            if not until_turn_completed or "error" in msg:
                return seen, response
    seen.append({"method": "driver/timeout"})
    return seen, response


out = {"steps": []}
rid = send("initialize", {"clientInfo": {"name": "mnemo-e2e", "version": "0"}})
wait(rid, False)
proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "initialized"}) + "\n")
proc.stdin.flush()
rid = send("hooks/list", {"cwds": [workdir]})
_, resp = wait(rid, False)
out["hooks"] = resp
rid = send("thread/start", {"cwd": workdir, "approvalPolicy": "never"})
_, resp = wait(rid, False)
thread = ((resp or {}).get("result") or {}).get("thread", {}).get("id")
out["thread"] = thread
out["thread_start"] = resp
for step in steps:
    if "write" in step:
        path, text = step["write"]
        with open(path, "w") as f:
            f.write(text)
        out["steps"].append({"step": step})
        continue
    if "turn" in step:
        rid = send("turn/start", {"threadId": thread, "input": [{"type": "text", "text": step["turn"]}]})
    else:
        rid = send("thread/compact/start", {"threadId": thread})
    seen, resp = wait(rid, True)
    out["steps"].append({"step": step, "response": resp, "notifications": seen})
proc.stdin.close()
try:
    proc.wait(timeout=10)
except subprocess.TimeoutExpired:
    proc.kill()
with open(out_file, "w") as f:
    json.dump(out, f, indent=1)
