"""A mock of the Anthropic Messages API (streaming), enough for Claude Code
to run a session offline: the first prompt gets a Read tool call on
notes.md (or on the absolute path `/….md` the prompt names), a tool result
gets a short answer, a compaction request gets a summary. A prompt holding
`OVERFLOW-NOW` is answered once with 400 "prompt is too long" (Claude Code
then compacts, trigger auto, and retries); a prompt holding
`OVERFLOW-AFTER-READ` gets its Read, then the request carrying the tool
result is answered once with that 400. Listens on 127.0.0.1, writes its
port to argv[1], logs requests to argv[2]."""
import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = open(sys.argv[2], "a")
OVERFLOWED = set()
LOCK = threading.Lock()


def first_user_text(msgs):
    """The text of the last user message typed by the user (not a tool result)."""
    for m in reversed(msgs):
        if m.get("role") != "user":
            continue
        t = text_of(m.get("content"))
        if t and "[tool_result]" not in t:
            return t
    return ""


def overflow(req):
    """True (once per prompt) when this request must get 400 prompt too long."""
    msgs = req.get("messages", [])
    if not msgs or is_compaction(req):
        return False
    last = text_of(msgs[-1]["content"])
    typed = first_user_text(msgs)
    key = None
    # Claude Code may put its own system-reminder message last.
    last_user = next((m for m in reversed(msgs) if m.get("role") == "user"), None)
    if last_user is not None:
        last = text_of(last_user.get("content"))
    m = re.search(r"OVERFLOW-NOW[\w-]*", last)
    if m:
        key = m.group(0)
    m2 = re.search(r"OVERFLOW-AFTER-READ[\w-]*", typed)
    if m2 and "[tool_result]" in last:
        key = m2.group(0)
    if key is None:
        return False
    with LOCK:
        if key in OVERFLOWED:
            return False
        OVERFLOWED.add(key)
    return True


def ends_with_tool_result(msgs):
    """Whether the last user message ends with a tool result (no prompt after it)."""
    for m in reversed(msgs):
        if m.get("role") != "user":
            continue
        c = m.get("content")
        return isinstance(c, list) and bool(c) and c[-1].get("type") == "tool_result"
    return False


def everything_roles(msgs):
    return "\n".join(text_of(m.get("content")) for m in msgs)


def is_compaction(req):
    msgs = req.get("messages", [])
    last = text_of(msgs[-1]["content"]) if msgs else ""
    return "Respond with TEXT ONLY" in last or "summary of the conversation" in last.lower()


def text_of(content):
    if isinstance(content, str):
        return content
    out = []
    for b in content or []:
        if b.get("type") == "text":
            out.append(b.get("text", ""))
        elif b.get("type") == "tool_result":
            out.append("[tool_result]")
    return "\n".join(out)


def answer(req):
    msgs = req.get("messages", [])
    last = text_of(msgs[-1]["content"]) if msgs else ""
    everything = json.dumps(req)
    if is_compaction(req):
        return [("text", "<summary>The user asked to read notes.md; it was read.</summary>")]
    if ends_with_tool_result(msgs):
        return [("text", "I read notes.md.")]
    typed = first_user_text(msgs)
    path = re.search(r"Read (/[\w./-]+\.md)\b", typed)
    if path and "[tool_result]" not in everything_roles(msgs):
        return [("tool_use", {"file_path": path.group(1)})]
    if "Read notes.md" in typed and "tool_use" not in everything:
        return [("tool_use", {"file_path": req.get("_cwd", "") + "notes.md"})]
    return [("text", "OK.")]


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        body = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n)
        try:
            req = json.loads(raw)
        except ValueError:
            req = {}
        LOG.write(json.dumps({"path": self.path, "req": req}) + "\n")
        LOG.flush()
        if "count_tokens" in self.path:
            return self.json({"input_tokens": 100})
        if not self.path.startswith("/v1/messages"):
            return self.json({})
        req["_cwd"] = CWD
        if overflow(req):
            return self.json({"type": "error", "error": {"type": "invalid_request_error",
                              "message": "prompt is too long: 212345 tokens > 200000 maximum"}}, 400)
        blocks = answer(req)
        if req.get("stream"):
            return self.stream(blocks)
        content = []
        for kind, v in blocks:
            if kind == "text":
                content.append({"type": "text", "text": v})
            else:
                content.append({"type": "tool_use", "id": "toolu_mock1", "name": "Read", "input": v})
        stop = "tool_use" if any(k == "tool_use" for k, _ in blocks) else "end_turn"
        self.json({"id": "msg_mock", "type": "message", "role": "assistant", "model": req.get("model", "m"),
                   "content": content, "stop_reason": stop, "stop_sequence": None,
                   "usage": {"input_tokens": 100, "output_tokens": 10}})

    def json(self, obj, status=200):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def stream(self, blocks):
        events = [("message_start", {"type": "message_start", "message": {
            "id": "msg_mock", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 1}}})]
        stop = "end_turn"
        for i, (kind, v) in enumerate(blocks):
            if kind == "text":
                events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}))
                events.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": v}}))
            else:
                stop = "tool_use"
                events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": "toolu_mock1", "name": "Read", "input": {}}}))
                events.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": json.dumps(v)}}))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 10}}))
        events.append(("message_stop", {"type": "message_stop"}))
        body = "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


CWD = sys.argv[3] if len(sys.argv) > 3 else ""
srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
srv.serve_forever()
