"""A mock of the OpenAI model API, enough for Codex CLI (Responses API,
`wire_api = "responses"`) and OpenAI-compatible clients (Chat Completions)
to run a session offline, on 127.0.0.1 only.

Usage: mock_openai.py PORT_FILE REQUEST_LOG

Writes the port it listens on to PORT_FILE (atomically), and every request
(path and JSON body) to REQUEST_LOG, one JSON object a line, so that tests
can assert what the model saw.

What it answers, from the text of the last user message of a request:

* a compaction request (Codex's summarisation prompt, OpenCode's "anchored
  summary" prompt, or any request whose last message asks for a summary) -> the text `SUMMARY: <...>`;
* a message holding `search the web` -> a `web_search_call` item (untrusted,
  `external` content in the transcript) and a short answer;
* a message holding `run a command` -> an `exec_command` function call
  (`cat notes.md`); the request that carries its output -> `The command ran.`;
  over Chat Completions the call is OpenCode's `bash` tool (a `tool_calls`
  delta), and a request whose last message is the tool's result (role
  `tool`) -> `The command ran.`;
* anything else -> `OK: <first words of the message>`.

Every response reports `usage.total_tokens`: 1,000,000 when the message holds
`BIG` (so that `model_auto_compact_token_limit` trips on the next turn),
else 100.

Streaming events follow the Responses API as Codex reads them:
`response.created`, `response.output_item.added` / `.done` per item,
`response.output_text.delta`, `response.completed` with `usage`. Chat
Completions streams `chat.completion.chunk` objects and `[DONE]`.
"""
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG_LOCK = threading.Lock()
LOG = open(sys.argv[2], "a", encoding="utf-8")
COUNTER = [0]

COMPACT_MARKERS = (
    "context checkpoint compaction",
    "summarize the conversation",
    "summary of the conversation",
    "handoff summary",
    "create a summary",
    "anchored summary",
)


def log(path, body):
    with LOG_LOCK:
        LOG.write(json.dumps({"path": path, "body": body}) + "\n")
        LOG.flush()


def next_id(prefix):
    with LOG_LOCK:
        COUNTER[0] += 1
        return f"{prefix}_{COUNTER[0]}"


def content_text(content):
    if isinstance(content, str):
        return content
    out = []
    for part in content or []:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            out.append(part["text"])
    return "\n".join(out)


def last_user_text(items):
    for item in reversed(items or []):
        if not isinstance(item, dict):
            continue
        if item.get("role") == "user" and item.get("type", "message") == "message":
            return content_text(item.get("content"))
    return ""


def plan(last, everything):
    """The items to answer with, as (kind, value) pairs, and the token count."""
    tokens = 1_000_000 if "BIG" in last else 100
    low = last.lower()
    if any(m in low for m in COMPACT_MARKERS):
        seen = [w for w in ("notes", "search", "hello") if w in everything.lower()]
        n = next_id("summary")
        return [("text", f"SUMMARY {n}: the conversation so far (" + ", ".join(seen) + ").")], 100
    if "search the web" in low:
        return [("web_search", "mnemo injected instructions"), ("text", "I searched the web.")], tokens
    if "run a command" in low:
        return [("call", {"cmd": "cat notes.md"})], tokens
    words = " ".join(last.split()[:6])
    return [("text", f"OK: {words}")], tokens


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        log(self.path, None)
        if self.path.rstrip("/").endswith("/models"):
            return self.json({"object": "list", "data": [{"id": "mock-model", "object": "model"}], "models": []})
        return self.json({})

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0") or "0")
        raw = self.rfile.read(n)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        log(self.path, body)
        if not isinstance(body, dict):
            body = {}
        path = self.path.split("?", 1)[0]
        if path.endswith("/responses"):
            return self.responses_api(body)
        if path.endswith("/chat/completions"):
            return self.chat_api(body)
        return self.json({})

    # --- Responses API -------------------------------------------------
    def responses_api(self, body):
        items = body.get("input") if isinstance(body.get("input"), list) else []
        if isinstance(body.get("input"), str):
            items = [{"type": "message", "role": "user", "content": body["input"]}]
        last = last_user_text(items)
        tail = items[-1] if items and isinstance(items[-1], dict) else {}
        if tail.get("type") == "function_call_output":
            answer, tokens = [("text", "The command ran.")], (1_000_000 if "BIG" in last else 100)
        else:
            answer, tokens = plan(last, json.dumps(items))
        rid = next_id("resp")
        events = [{"type": "response.created", "response": {"id": rid}}]
        for kind, value in answer:
            if kind == "text":
                item = {"type": "message", "role": "assistant", "id": next_id("msg"),
                        "content": [{"type": "output_text", "text": value}]}
                events.append({"type": "response.output_item.added", "item": item})
                events.append({"type": "response.output_text.delta", "delta": value})
                events.append({"type": "response.output_item.done", "item": item})
            elif kind == "call":
                item = {"type": "function_call", "id": next_id("fc"), "call_id": next_id("call"),
                        "name": "exec_command", "arguments": json.dumps(value)}
                events.append({"type": "response.output_item.added", "item": item})
                events.append({"type": "response.output_item.done", "item": item})
            else:
                item = {"type": "web_search_call", "id": next_id("ws"), "status": "completed",
                        "action": {"type": "search", "query": value}}
                events.append({"type": "response.output_item.added", "item": item})
                events.append({"type": "response.output_item.done", "item": item})
        events.append({"type": "response.completed", "response": {"id": rid, "usage": {
            "input_tokens": tokens, "input_tokens_details": None, "output_tokens": 1,
            "output_tokens_details": None, "total_tokens": tokens}}})
        if body.get("stream") is False:
            output = [e["item"] for e in events if e["type"] == "response.output_item.done"]
            return self.json({"id": rid, "object": "response", "status": "completed", "output": output,
                              "usage": events[-1]["response"]["usage"]})
        self.sse("".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events))

    # --- Chat Completions ----------------------------------------------
    def chat_api(self, body):
        msgs = body.get("messages") if isinstance(body.get("messages"), list) else []
        last = ""
        for m in reversed(msgs):
            if isinstance(m, dict) and m.get("role") == "user":
                last = content_text(m.get("content"))
                break
        tail = msgs[-1] if msgs and isinstance(msgs[-1], dict) else {}
        if tail.get("role") == "tool":
            answer, tokens = [("text", "The command ran.")], (1_000_000 if "BIG" in last else 100)
        else:
            answer, tokens = plan(last, json.dumps(msgs))
        text = " ".join(v for k, v in answer if k == "text") or "OK."
        calls = [{"index": 0, "id": next_id("call"), "type": "function", "function": {
            "name": "bash", "arguments": json.dumps({"command": v["cmd"], "description": "Show the notes"})}}
            for k, v in answer if k == "call"]
        cid = next_id("chatcmpl")
        model = body.get("model", "mock-model")
        usage = {"prompt_tokens": tokens, "completion_tokens": 1, "total_tokens": tokens + 1}
        finish = "tool_calls" if calls else "stop"
        if not body.get("stream"):
            message = {"role": "assistant", "content": None if calls else text}
            if calls:
                message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
            return self.json({"id": cid, "object": "chat.completion", "model": model, "choices": [
                {"index": 0, "message": message, "finish_reason": finish}], "usage": usage})
        delta = {"tool_calls": calls} if calls else {"content": text}
        chunks = [
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage},
        ]
        out = ""
        for c in chunks:
            c.update({"id": cid, "object": "chat.completion.chunk", "created": 0, "model": model})
            out += f"data: {json.dumps(c)}\n\n"
        self.sse(out + "data: [DONE]\n\n")

    # --- plumbing --------------------------------------------------------
    def json(self, obj):
        data = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def sse(self, text):
        data = text.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tmp = sys.argv[1] + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, sys.argv[1])
    srv.serve_forever()


if __name__ == "__main__":
    main()
