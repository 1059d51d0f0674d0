#!/usr/bin/env python3
"""Replays ACS conformance vectors against the real `mnemo guard http` and
`mnemo guard stdio` binaries and compares the outcome with a committed
expectation file.

    run_vectors.py --mnemo target/debug/mnemo --corpus DIR --own DIR \
        --expected expected.tsv [--update]

* The corpus is `vectors-acs-core` of the `agent-evidence-vectors` package
  (data only). Every member whose payload carries a request envelope
  (`payload.request` or `payload.steps[].request`) goes on the wire; the
  others describe records, traces or logs, not a request.
* `--own` holds mnemo's own members in the same form, with a `runner`
  object for what the corpus leaves to the runner (policy, keys, clock).
* Each member gets a fresh Guardian per transport, its clock fixed at the
  member's time (`MNEMO_GUARD_NOW`), because the corpus's timestamps (and
  the signatures over them) are fixed.
* Scoring follows the corpus: `allow` passes when every answer is a
  ServerHello or an `allow`; `deny` when the last answer is an error (with
  the member's registry code, when it names one) or a `deny`/`defer`;
  `unmeasurable` is reported, never scored (mnemo's own members may also
  expect `modify`, the only answer postCompact gives to a wrong lineage). Every response to a request
  signed under a configured key must carry a signature that verifies under
  the session key derived here, independently of mnemo (RFC 5869 HKDF-SHA256,
  empty salt, info = session_id, 32 bytes); one that does not is SIG-FAIL.

* The expectation file has a fourth column, the reason a row does not
  PASS (client, record, not-implemented, contradiction, by-design); a row
  that does not pass without a reason fails the run. `corpus*` marks the
  members the standard's reference runner sends; they are counted apart.
* Own members may keep their Guardian's state in SQLite (`runner.store`)
  and restart it between steps (`{"restart": true}`), send a body nested
  past any parser (`raw_nested_depth`), and check each answer (`expect`:
  code, decision, reason codes, JSON pointers, `chain_advances`).

* Members that judge the Observed Agent (`applied`, or `witnessScope: SELF`
  with the agent's side of a scenario) are also played in the client role:
  a fake Guardian of the runner's answers as the payload says and the real
  `mnemo gate` is the Observed Agent: over HTTP with `--guardian-url` (the
  fake serves 127.0.0.1), over stdio with `--guardian-cmd` (the fake is this
  script run as `--fake-stdio-guardian SPEC`, Content-Length frames on its
  stdin and stdout; a gateway page is its HTML body sent as a frame). Their
  rows carry PASS-CLIENT / N/A-CLIENT / FAIL-CLIENT unless the Guardian's
  answer passes (and the client did nothing the member forbids), per
  transport. The gate runs with the posture the member names
  (`--guardian-startup-posture`, `--guardian-on-decision-failure`), with
  its trace endpoint (`--guardian-trace-endpoint`) at a closed port for a
  trace sink or at a live fake OTLP collector for a member that judges the
  agent's trace, and its
  evidence includes the lines it appended to the bank's
  `_xref/guardian-audit.jsonl` (the deployment's audit log, which is not
  counted as a change of the bank). The summary also prints the answer-alone bound: the
  reference runner's members grouped by byte-identical requests, and the
  best score a Guardian could reach by its answer alone.

Standard library only. Exit status: 0 when every row matches the
expectation file, 1 on any difference, 2 when it could not run.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import json
import os
import shlex
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

RUNNER_SECRET = b"mnemo-conformance-runner-secret!"  # 32 bytes, label k1
NS = uuid.UUID("9a1f3c52-6e0b-4d6e-9c55-3c1b2f0e7a10")
LEGACY_METHODS = {"hooks/toolCallRequest": "steps/toolCallRequest", "handshake/hello": "handshake/hello"}


# ---- the standard's signature rules, written from §10 ------------------------

def jcs(value) -> bytes:
    """RFC 8785 for the values used here (strings, integers, objects, arrays)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def hkdf(ikm: bytes, info: bytes, length: int = 32) -> bytes:
    prk = hmac.new(b"\x00" * 32, ikm, hashlib.sha256).digest()
    out, block, i = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([i]), hashlib.sha256).digest()
        out += block
        i += 1
    return out[:length]


def session_key(secret: bytes, session: str) -> bytes:
    return hkdf(secret, session.encode())


def sign(env: dict, key_id: str, secret: bytes, *, corrupt=False, omit_session=False) -> dict:
    env = json.loads(json.dumps(env))
    env["params"].pop("signature", None)
    view = json.loads(json.dumps(env))
    if omit_session:
        view["params"]["metadata"].pop("session_id", None)
    session = env["params"]["metadata"]["session_id"]
    mac = hmac.new(session_key(secret, session), jcs(view), hashlib.sha256).digest()
    if corrupt:
        mac = bytes(b ^ 0xFF for b in mac)
    env["params"]["signature"] = {"algorithm": "HMAC-SHA256", "key_id": key_id,
                                  "value": base64.b64encode(mac).decode()}
    return env


def response_signature_ok(resp: dict, session: str, secret: bytes, key_id: str) -> bool:
    side = "result" if isinstance(resp.get("result"), dict) else "error"
    carrier = resp.get(side)
    if not isinstance(carrier, dict) or not isinstance(carrier.get("signature"), dict):
        return False
    view = json.loads(json.dumps(resp))
    sig = view[side].pop("signature")
    if sig.get("key_id") != key_id:
        return False
    mac = hmac.new(session_key(secret, session), jcs(view), hashlib.sha256).digest()
    try:
        return hmac.compare_digest(mac, base64.b64decode(sig.get("value", "")))
    except (ValueError, TypeError):
        return False


# ---- Guardians -------------------------------------------------------------

class Guardian:
    """One `mnemo guard http|stdio --memory` process."""

    def __init__(self, mnemo: str, transport: str, policy: str, keys: dict, clock: str, tmp: Path,
                 store: str = "memory", fresh: bool = True):
        self.transport = transport
        self.spawn_args = (mnemo, transport, policy, keys, clock, tmp, store, False)
        tmp.mkdir(parents=True, exist_ok=True)
        if fresh:  # a store left by an earlier run would replay this one
            for f in tmp.glob("guardian.sqlite3*"):
                f.unlink()
        pol = tmp / "policy.toml"
        env = dict(os.environ)
        lines = [policy.rstrip(), ""] if policy else []
        for i, (label, secret) in enumerate(keys.items()):
            var = f"MNEMO_RUNNER_KEY_{i}"
            env[var] = secret.hex()
            lines += ["[[guardian.hmac_keys]]", f'key_id = "{label}"', f'env = "{var}"', 'encoding = "hex"', ""]
        pol.write_text("\n".join(lines))
        env["MNEMO_GUARD_NOW"] = clock
        # A member that restarts its Guardian keeps its state in a SQLite
        # file (ACS §10.3: replay memory survives a restart).
        where = ["--memory"] if store == "memory" else ["--store", str(tmp / "guardian.sqlite3")]
        args = [mnemo, "--quiet", "guard", transport, *where, "--policy", str(pol)]
        if transport == "http":
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                self.port = s.getsockname()[1]
            args += ["--listen", f"127.0.0.1:{self.port}"]
            self.proc = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            for _ in range(200):
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1):
                        break
                except OSError:
                    if self.proc.poll() is not None:
                        raise RuntimeError("guard http exited: " + self.proc.stderr.read().decode())
                    time.sleep(0.02)
            else:
                raise RuntimeError("guard http did not start")
        else:
            self.proc = subprocess.Popen(args, env=env, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def restart(self) -> "Guardian":
        self.close()
        return Guardian(*self.spawn_args)

    def send(self, envelope) -> dict:
        body = envelope if isinstance(envelope, bytes) else json.dumps(envelope).encode()
        if self.transport == "http":
            rq = urllib.request.Request(f"http://127.0.0.1:{self.port}/acs", data=body,
                                        headers={"content-type": "application/json"})
            try:
                with urllib.request.urlopen(rq, timeout=20) as r:
                    return json.loads(r.read())
            except urllib.error.HTTPError as e:
                return {"http_status": e.code}
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        length = None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("guard stdio closed: " + self.proc.stderr.read().decode())
            line = line.strip()
            if not line:
                break
            k, _, v = line.decode().partition(":")
            if k.strip().lower() == "content-length":
                length = int(v)
        return json.loads(self.proc.stdout.read(length))

    def close(self):
        if self.transport == "stdio" and self.proc.stdin:
            self.proc.stdin.close()
        else:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# ---- realizing a member on the wire ------------------------------------------

def as_uuid(member_id: str, text: str) -> str:
    try:
        return str(uuid.UUID(text))
    except ValueError:
        return str(uuid.uuid5(NS, member_id + ":" + text))


def steps_of(member: dict) -> list | None:
    p = member.get("payload", {})
    if isinstance(p.get("steps"), list) and all("request" in s for s in p["steps"]):
        return p["steps"]
    if "request" in p:
        return [{"request": p["request"]}]
    return None


def fill(value, transport: str):
    """Own members: $TRANSPORT / $OTHER_TRANSPORT placeholders."""
    other = "stdio" if transport == "http" else "http"
    if isinstance(value, str):
        return value.replace("$OTHER_TRANSPORT", other).replace("$TRANSPORT", transport)
    if isinstance(value, list):
        return [fill(v, transport) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, transport) for k, v in value.items()}
    return value


def hello_for(session: str, methods: list, transport: str, when: str) -> dict:
    rid = str(uuid.uuid5(NS, "hello:" + session))
    return {"jsonrpc": "2.0", "id": rid, "method": "handshake/hello", "params": {
        "acs_version": "0.1.0", "request_id": rid, "timestamp": when,
        "metadata": {"agent_id": "mnemo-vector-runner", "session_id": session},
        "payload": {"acs_versions_supported": ["0.1.0"], "methods_implemented": methods,
                    "transports_supported": [transport], "provenance_producer": "deterministic",
                    "profiles_supported": ["acs-core"]}}}


def plan_corpus(member: dict, transport: str) -> dict:
    """The wire requests, keys and clock for a corpus member."""
    steps = steps_of(member)
    p = member["payload"]
    first = steps[0]["request"]
    if "jsonrpc" in first:
        # Already a JSON-RPC envelope, often signed: sent byte for byte.
        cfg = p.get("verifier") or p.get("observed_agent") or {}
        keys = {k: bytes.fromhex(v) for k, v in cfg.get("secret_hex", {}).items()}
        reqs = [json.loads(json.dumps(s["request"])) for s in steps]
        clock = first["params"]["timestamp"]
        out = []
        for r in reqs:
            session = r["params"]["metadata"]["session_id"]
            if r["method"] != "handshake/hello" and not any(
                    x.get("method") == "handshake/hello" for x in reqs):
                if not any(o["env"]["method"] == "handshake/hello" and
                           o["env"]["params"]["metadata"]["session_id"] == session for o in out):
                    h = hello_for(session, sorted({x["method"] for x in reqs}), transport, clock)
                    named = r["params"].get("signature", {}).get("key_id")
                    label = named if named in keys else next(iter(keys), None)
                    if label:
                        h = sign(h, label, keys[label])
                    out.append({"env": h, "setup": True, "key": label})
            named = r["params"].get("signature", {}).get("key_id")
            out.append({"env": r, "setup": False, "key": named if named in keys else None})
        return {"policy": "[guardian]\nrequire_provenance = false\n", "keys": keys,
                "clock": clock, "requests": out}
    # The corpus's older shorthand: {acs, method: hooks/..., params: {tool: ...}, "AAAA" signatures}.
    keys = {"k1": RUNNER_SECRET}
    state = p.get("signature_state", "VALID")
    clock = p.get("guardian_clock") or first.get("timestamp")
    out, seen_ids = [], set()
    has_hello = any(s["request"]["method"] == "handshake/hello" for s in steps)
    methods = sorted({LEGACY_METHODS.get(s["request"]["method"], s["request"]["method"]) for s in steps})
    for i, st in enumerate(steps):
        r = st["request"]
        method = LEGACY_METHODS.get(r["method"], r["method"])
        meta = r.get("metadata", {})
        session = as_uuid(member["id"], meta.get("session_id", "s"))
        rid = r["request_id"]
        if rid in seen_ids and member["family"] != "acs-f-2":
            # The corpus reuses one placeholder id for unrelated steps; only
            # the replay family (acs-f-2) means the repetition.
            rid = str(uuid.uuid5(NS, f"{member['id']}:{i}"))
        seen_ids.add(rid)
        params = {"acs_version": r.get("acs_version") or (r.get("acs", "0.1") + ".0"),
                  "request_id": rid, "timestamp": r["timestamp"],
                  "metadata": {"agent_id": meta.get("agent_id", "mnemo-vector-runner"), "session_id": session}}
        if "turn_id" in meta and method.startswith("steps/"):
            params["metadata"]["turn_id"] = meta["turn_id"]
        if "nonce" in r:
            params["nonce"] = r["nonce"]
        if method == "handshake/hello":
            payload = dict(r.get("params", {}))
            payload["transports_supported"] = [transport if t in ("http", "stdio") else t
                                               for t in payload.get("transports_supported", [])]
        else:
            tool = r.get("params", {}).get("tool", {})
            payload = {"tool": {"name": tool.get("name", "")},
                       "arguments": {k: {"value": v} for k, v in tool.get("arguments", {}).items()}}
        params["payload"] = payload
        env = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        if i == 0 and not has_hello:
            out.append({"env": sign(hello_for(session, methods, transport, r["timestamp"]), "k1", RUNNER_SECRET),
                        "setup": True, "key": "k1"})
        if "signature" in r or state != "ABSENT":
            if state == "ABSENT":
                pass
            elif state == "INVALID":
                env = sign(env, "k1", RUNNER_SECRET, corrupt=True)
            elif state == "COVERS_SUBSET":
                env = sign(env, "k1", RUNNER_SECRET, omit_session=True)
            else:
                env = sign(env, "k1", RUNNER_SECRET)
        out.append({"env": env, "setup": False, "key": "k1" if "signature" in env["params"] else None})
    return {"policy": deployment_policy(p, steps), "keys": keys, "clock": clock, "requests": out}


def deployment_policy(p: dict, steps: list) -> str:
    """The member's deployment state that the request does not carry
    (intent, budgets, approvals, the policy engine's verdict), written as
    mnemo policy. Only what the member states is written, on top of the
    conformance deployment: fail closed (`on_decision_failure = "deny"`) and
    capability refusals answered as the corpus's CAPABILITY_NOT_NEGOTIATED
    (`[tools] refusal_form = "error"`, which mnemo accepts only fail-closed,
    ACS 6.4)."""
    policy = '[guardian]\nrequire_provenance = false\non_decision_failure = "deny"\n'
    tools = ['refusal_form = "error"']
    answer = p.get("handshake_answer")
    if isinstance(answer, dict) and (answer.get("error") or {}).get("code") == -32000:
        # The member states that the Guardian's policy refused the session
        # (SESSION_REFUSED, e.g. an agent_id the policy does not permit,
        # ACS 17.1): written as a policy that permits no agent.
        policy += "permitted_agents = []\n"
    intent = p.get("intent") if isinstance(p.get("intent"), dict) else {}
    if intent.get("scope_mode") == "strict" and isinstance(intent.get("parsed"), list):
        # The member's fixed, strict Intent: mnemo has no IBAC, so its
        # deployment policy stands in: only the intent's capabilities (as
        # tool names) are registered.
        tools.append("registered = " + json.dumps([str(c) for c in intent["parsed"]]))
    first_tool = steps[0]["request"].get("params", {}).get("tool", {}).get("name", "")
    required, approvers, grants = [], [], []
    approval = p.get("approval") if isinstance(p.get("approval"), dict) else None
    if approval:
        # A presented approval: its approver is one the policy
        # authenticates when the member calls it VALID; the grant is bound
        # to the agent and tool it was issued for.
        who = approval.get("approver", {})
        name = f"{who.get('type', 'human')}:{who.get('id', '')}"
        bound = approval.get("issued_for", {})
        required.append(bound.get("tool", first_tool))
        if approval.get("state", "VALID") == "VALID":
            approvers.append(name)
        grants.append({"approver": name, "agent_id": bound.get("agent_id", "*"),
                       "tool": bound.get("tool", first_tool), "decision": "allow"})
    answer = p.get("approver_response") if isinstance(p.get("approver_response"), dict) else None
    if answer:
        # The approver's answer for this call, recorded as a standing grant.
        name = "service:approver"
        required.append(first_tool)
        approvers.append(name)
        grants.append({"approver": name, "agent_id": "*", "tool": first_tool,
                       "decision": str(answer.get("decision", "")).lower()})
    verdict = p.get("policy_verdict_before_mapping")
    if isinstance(verdict, dict) and verdict.get("decision") == "escalate":
        # The policy engine escalates the call to an approver; with no
        # grant there is none to resolve it (approver_capability: none).
        required.append(first_tool)
    if required:
        tools.append("[tools.approval]")
        tools.append("required = " + json.dumps(sorted(set(required))))
        tools.append("approvers = " + json.dumps(sorted(set(approvers))))
        for g in grants:
            tools.append("[[tools.approval.grant]]")
            tools += [f"{k} = {json.dumps(v)}" for k, v in g.items()]
    budget = (p.get("policy") or {}).get("budget") if isinstance(p.get("policy"), dict) else None
    if isinstance(budget, dict) and "max_calls_per_turn" in budget:
        tools.append("[[tools.budget]]")
        tools.append("tool = " + json.dumps(budget.get("tool", first_tool)))
        tools.append(f"max_calls_per_turn = {int(budget['max_calls_per_turn'])}")
    if tools:
        policy += "[tools]\n" + "\n".join(tools) + "\n"
    return policy


def plan_own(member: dict, transport: str) -> dict:
    run = member.get("runner", {})
    keys = {k: bytes.fromhex(v) for k, v in run.get("keys", {}).items()}
    out = []
    for st in member["payload"]["steps"]:
        if st.get("restart"):
            # Stop the Guardian and start it again on the same store.
            out.append({"restart": True})
            continue
        if "raw_nested_depth" in st:
            # A body nested past any parser's stack: built here, never parsed here.
            d = int(st["raw_nested_depth"])
            env = (b'{"jsonrpc":"2.0","id":1,"method":"steps/userMessage","params":'
                   + b"[" * d + b"]" * d + b"}")
            out.append({"env": env, "setup": False, "key": None, "expect": st.get("expect")})
            continue
        env = fill(json.loads(json.dumps(st["request"])), transport)
        label = st.get("sign", run.get("sign"))
        if label and not st.get("unsigned"):
            env = sign(env, label, keys[label], corrupt=st.get("corrupt", False))
        out.append({"env": env, "setup": False, "key": label if label in keys and not st.get("unsigned") else None,
                    "expect": fill(st.get("expect"), transport)})
    return {"policy": run.get("policy", ""), "keys": keys, "clock": run["clock"], "requests": out,
            "store": run.get("store", "memory")}


# ---- client role: mnemo as the Observed Agent -------------------------------
#
# Some members judge the Observed Agent's evidence, not the Guardian's
# answer: what it applied after a MODIFY, whether it read a gateway page as
# a decision, whether a session started with no ServerHello. Their request
# is a plain step that other members send byte for byte expecting the
# opposite verdict (answer_alone_bound below), so no Guardian answer scores
# them. For those the runner also plays the member's scenario against
# mnemo's own client: a fake Guardian of its own answers as the payload says,
# the real `mnemo gate --guardian-url` is the Observed Agent, and the
# runner looks at what mnemo did (exit status, its refusal line, whether the
# bank changed, whether a step followed the hello).

SCENARIO_FIELDS = ("guardian_response", "audit_events", "on_decision_failure", "trace_sink",
                   "observed_disposition", "handshake_answer", "server_hello", "startup_posture",
                   "applied", "deployment_audit_log")
SESSION_REFUSED = -32000  # §4.1: a refusal is a decision; the startup posture does not apply
CLIENT_TIMEOUT_S = 5  # RemoteGuardian's connect/read timeout
ALLOWED_SUMMARY = {"agent": "hermes", "summary": "Added POST /api/v1/orders returning 201",
                   "status": "complete"}


def judges_client(member: dict) -> bool:
    """A member whose verdict is about the Observed Agent: it states what
    the agent applied (`applied`), or it is witnessed by the agent itself
    (`witnessScope: SELF`) and describes the agent's side of a scenario."""
    p = member.get("payload", {})
    if "applied" in p:
        return True
    return member.get("witnessScope") == "SELF" and any(k in p for k in SCENARIO_FIELDS)


def fake_how(hello, decisive, method: str):
    return hello if method == "handshake/hello" else (
        decisive if method == "steps/preCompact" else "allow")


def fake_answer(how, rid) -> bytes:
    """The JSON-RPC answer of a fake Guardian (`how` is not "silent" and
    not a raw HTTP answer)."""
    if how == "ok":
        out = {"result": {"acs_version": "0.1.0", "negotiated_version": "0.1.0",
                          "methods_evaluated": ["steps/memoryContextRetrieval", "steps/preCompact"]}}
    elif how == "allow":
        out = {"result": {"acs_version": "0.1.0", "request_id": rid, "type": "final",
                          "decision": "allow", "reasoning": "fake Guardian: allow"}}
    elif "error" in how:
        out = {"error": {"message": "fake Guardian", **how["error"]}}
    else:
        out = {"result": {**how, "request_id": rid}}
    return json.dumps({"jsonrpc": "2.0", "id": rid, **out}).encode()


class FakeGuardian:
    """A Guardian of our own on 127.0.0.1 that answers as a scenario says:
    `hello` and `decisive` (the answer to steps/preCompact) are each
    "ok"/"allow", "silent" (nothing until the client gives up), a JSON-RPC
    error object, a decision result object, or a raw HTTP answer
    {"status", "content_type", "body"}. Every other step is allowed."""

    def __init__(self, hello="ok", decisive="allow"):
        import http.server
        import threading
        self.hello, self.decisive, self.methods = hello, decisive, []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                try:
                    req = json.loads(self.rfile.read(n))
                except ValueError:
                    req = {}
                method = req.get("method", "?")
                fake.methods.append(method)
                rid = req.get("id")
                how = fake_how(fake.hello, fake.decisive, method)
                if how == "silent":
                    # Hold the connection, answer nothing; the client's
                    # timeout ends it (its close ends the read).
                    self.connection.settimeout(CLIENT_TIMEOUT_S + 10)
                    try:
                        self.rfile.read(1)
                    except OSError:
                        pass
                    self.close_connection = True
                    return
                if isinstance(how, dict) and "status" in how:
                    status, ctype, body = how["status"], how["content_type"], how["body"].encode()
                else:
                    status, ctype = 200, "application/json"
                    body = fake_answer(how, rid)
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(body)))
                self.send_header("connection", "close")
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/acs"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class FakeStdioGuardian:
    """The same fake Guardian over stdio: mnemo runs this script with
    `--fake-stdio-guardian SPEC` as its Guardian command (`--guardian-cmd`);
    SPEC (a JSON file) holds `hello`, `decisive` and the file the child
    appends each method it read to. A raw HTTP answer is sent as its body
    in a frame (a page where a JSON-RPC message belongs)."""

    def __init__(self, tmp: Path, hello="ok", decisive="allow"):
        self.methods_file = tmp / "fake-methods.txt"
        self.methods_file.write_text("")
        spec = tmp / "fake-spec.json"
        spec.write_text(json.dumps({"hello": hello, "decisive": decisive,
                                    "methods": str(self.methods_file)}))
        self.cmd = shlex.join([sys.executable, os.path.abspath(__file__), "--fake-stdio-guardian",
                               str(spec)])

    @property
    def methods(self) -> list:
        return self.methods_file.read_text().split()

    def close(self):
        pass


def fake_stdio_guardian(spec_path: str) -> int:
    """The child side of FakeStdioGuardian: Content-Length frames on stdin
    and stdout until end of input (or, "silent", until killed)."""
    spec = json.loads(Path(spec_path).read_text())
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    while True:
        length = None
        while True:
            line = inp.readline()
            if not line:
                return 0
            line = line.strip()
            if not line:
                if length is None:
                    continue
                break
            k, _, v = line.decode(errors="replace").partition(":")
            if k.strip().lower() == "content-length":
                length = int(v)
        try:
            req = json.loads(inp.read(length))
        except ValueError:
            req = {}
        method = req.get("method", "?") if isinstance(req, dict) else "?"
        with open(spec["methods"], "a") as f:
            f.write(method + "\n")
        how = fake_how(spec["hello"], spec["decisive"], method)
        if how == "silent":
            # Answer nothing; the client's timeout ends this process.
            time.sleep(CLIENT_TIMEOUT_S + 10)
            return 0
        if isinstance(how, dict) and "status" in how:
            body = how["body"].encode()
        else:
            body = fake_answer(how, req.get("id") if isinstance(req, dict) else None)
        out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        out.flush()


class ClientHung(Exception):
    pass


AUDIT_LOG = "_xref/guardian-audit.jsonl"  # the deployment's audit log of mnemo's client
LOCK = ".tmp/compress.lock"  # every locked command creates it; not content


def bank_state(bank: Path) -> dict:
    """The bank's content: every file but the client's audit log (read
    apart) and the lock."""
    if not bank.exists():
        return {}
    return {rel: hashlib.sha256(f.read_bytes()).hexdigest()
            for f in sorted(bank.rglob("*")) if f.is_file()
            for rel in [str(f.relative_to(bank))] if rel not in (AUDIT_LOG, LOCK)}


def audit_lines(bank: Path) -> list:
    try:
        text = (bank / AUDIT_LOG).read_text()
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            out.append({"unparsed": line})
    return out


class FakeCollector:
    """An OTLP/HTTP collector of our own on 127.0.0.1: keeps the (path,
    JSON body) of every POST and answers 200."""

    def __init__(self):
        import http.server
        import threading
        self.posts = []
        collector = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(n))
                except ValueError:
                    body = None
                collector.posts.append((self.path, body))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def otlp_events(body) -> list[tuple[str, str, dict]]:
    """(span name, event name, {key: value}) of every span event of an
    OTLP/HTTP JSON ExportTraceServiceRequest; a span with no event gives one
    row with event name ''."""
    def value(v):
        if not isinstance(v, dict):
            return None
        if "arrayValue" in v:
            return [value(x) for x in (v["arrayValue"] or {}).get("values") or []]
        for k in ("stringValue", "intValue", "boolValue", "doubleValue"):
            if k in v:
                return v[k]
        return None

    def attrs(a):
        return {x.get("key"): value(x.get("value")) for x in a or [] if isinstance(x, dict)}

    out = []
    for rs in (body or {}).get("resourceSpans") or []:
        for ss in rs.get("scopeSpans") or []:
            for sp in ss.get("spans") or []:
                events = sp.get("events") or []
                span_attrs = attrs(sp.get("attributes"))
                if not events:
                    out.append((sp.get("name", ""), "", span_attrs))
                for e in events:
                    out.append((sp.get("name", ""), e.get("name", ""), {**span_attrs, **attrs(e.get("attributes"))}))
    return out


def observe_client(mnemo: str, tmp: Path, transport: str, hello="ok", decisive="allow",
                   env_extra=None, postures=None) -> dict:
    """One `mnemo gate` against a fake Guardian (`--guardian-url` to a
    FakeGuardian over HTTP, `--guardian-cmd` running a FakeStdioGuardian
    over stdio), with the postures the member names (`startup_posture`,
    `on_decision_failure`): mnemo's evidence, with the audit lines this gate
    appended."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "summary.json").write_text(json.dumps(ALLOWED_SUMMARY))
    bank = tmp / "bank"
    before = bank_state(bank)
    logged = len(audit_lines(bank))
    if transport == "http":
        fake = FakeGuardian(hello, decisive)
        flag = ["--guardian-url", fake.url]
    else:
        fake = FakeStdioGuardian(tmp, hello, decisive)
        flag = ["--guardian-cmd", fake.cmd]
    env = {k: v for k, v in os.environ.items()
           if k not in ("MNEMO_CONFIG", "MNEMO_GUARDIAN_URL", "MNEMO_GUARDIAN_CMD", "MNEMO_GUARDIAN_CA",
                        "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")}
    env.update(env_extra or {})
    flags = []
    for key, value in (postures or {}).items():
        flags += ["--guardian-" + key.replace("_", "-"), value]
    try:
        exe = os.path.abspath(mnemo) if os.sep in mnemo else mnemo  # it runs in tmp
        p = subprocess.run([exe, "--bank", str(bank), "gate", "--phase", "1", "--from", "hermes",
                            "--to", "aphrodite", "--date", "2026-09-09", *flag,
                            *flags, str(tmp / "summary.json")], env=env, cwd=tmp,
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=CLIENT_TIMEOUT_S * 6)
        code, stderr = p.returncode, p.stderr
    except subprocess.TimeoutExpired as e:  # run() has killed it
        raise ClientHung(f"mnemo gate did not finish within {CLIENT_TIMEOUT_S * 6} s") from e
    finally:
        fake.close()
    err = stderr.decode(errors="replace").strip().splitlines()
    return {"exit": code, "line": err[-1] if err else "",
            "started": any(m != "handshake/hello" for m in fake.methods),
            "asked": "steps/preCompact" in fake.methods,
            "executed": bank_state(bank) != before, "methods": list(fake.methods),
            "audit": audit_lines(bank)[logged:]}


def audit_text(ev: dict) -> str:
    if not ev["audit"]:
        return "no audit line"
    a = ev["audit"][-1]
    codes = ",".join(a.get("reason_codes") or []) or "-"
    return (f"audit: {a.get('event')}, received {a.get('received')}, applied {a.get('applied')}, "
            f"reason codes {codes}")


def evidence_text(ev: dict) -> str:
    if ev["executed"]:
        return f"exit {ev['exit']}, compacted"
    what = "no step after the hello" if not ev["started"] else "refused"
    return f"exit {ev['exit']}, {what}, bank unchanged"


def modify_trace(mnemo: str, tmp: Path, transport: str, result: dict, rejected: list) -> tuple[str, str, str]:
    """A MODIFY a compaction cannot apply, with mnemo's trace export to a
    live collector: the member rejects an Observed Agent trace that calls
    the defined substitution (6.5) a decision failure."""
    collector = FakeCollector()
    try:
        ev = observe_client(mnemo, tmp, transport,
                            decisive={k: v for k, v in result.items() if k != "request_id"},
                            postures={"trace_endpoint": collector.url})
    finally:
        collector.close()
    events = [e for _, body in collector.posts for e in otlp_events(body)]
    names = sorted({f"{span}/{name}" for span, name, _ in events if name})
    rejected_names = sorted({e.get("name", "") for sp in rejected if isinstance(sp, dict)
                             for e in sp.get("events") or [] if isinstance(e, dict)})
    got = (f"preCompact answered {result.get('decision')}: " + evidence_text(ev) + "; " + audit_text(ev)
           + f"; trace: {len(collector.posts)} export(s), events {', '.join(names) or 'none'}")
    if ev["executed"] or ev["exit"] == 0:
        return "FAIL-CLIENT", got, "mnemo cannot apply a MODIFY, yet compacted"
    if len(collector.posts) != 1:
        return "FAIL-CLIENT", got, "no trace export reached the live collector"
    if any(name == "acs.decision.failure" for _, name, _ in events):
        return ("FAIL-CLIENT", got, "mnemo's trace calls the defined modify_unsupported substitution a "
                "decision failure, the record the member rejects (" + ", ".join(rejected_names) + ")")
    decision = [a for span, name, a in events if span == "acs.compact" and name == "acs.decision"]
    sub = [a for span, name, a in events if span == "acs.compact" and name == "mnemo.decision.substitution"]
    if not (decision and decision[0].get("acs.decision") == result.get("decision")
            and sub and sub[0].get("mnemo.applied") == "deny"
            and "modify_unsupported" in (sub[0].get("mnemo.reason_codes") or [])):
        return ("FAIL-CLIENT", got, "mnemo's trace does not record the decision received and the "
                "substitution applied (6.5)")
    return ("PASS-CLIENT", got, "mnemo's trace to a live collector records the Guardian's acs.decision "
            "(modify) and the substitution (applied deny, modify_unsupported), with no acs.decision.failure, "
            "the trace the member rejects; its audit line records the same")


def client_replay(mnemo: str, member: dict, tmp: Path, transport: str) -> tuple[str, str, str]:
    try:
        return play_client(mnemo, member, tmp, transport)
    except ClientHung as e:
        return "FAIL-CLIENT", str(e), "the Observed Agent must wait up to its timeout, not hang"


def play_client(mnemo: str, member: dict, tmp: Path, transport: str) -> tuple[str, str, str]:
    """(status, what mnemo did, why) of the member's scenario played
    against mnemo's client over `transport`. PASS-CLIENT: mnemo's evidence is not
    what the member rejects (or is what it accepts); N/A-CLIENT: the
    scenario needs something mnemo's client does not have, and mnemo did
    nothing the member's property forbids; FAIL-CLIENT otherwise."""
    p = member["payload"]
    steps = steps_of(member) or []
    method = steps[0]["request"].get("method", "") if steps else ""

    if method == "handshake/hello" and any(k in p for k in ("handshake_answer", "server_hello", "startup_posture")):
        answer = p.get("handshake_answer")
        hello = "silent" if answer is None else (answer if isinstance(answer, dict) and "error" in answer else "ok")
        posture = p.get("startup_posture", "refuse")
        if posture not in ("refuse", "proceed"):
            return "N/A-CLIENT", "not played", f"startup posture '{posture}': mnemo's are refuse and proceed"
        ev = observe_client(mnemo, tmp, transport, hello=hello, postures={"startup_posture": posture})
        if hello == "silent":
            said = "hello unanswered"
        elif hello == "ok":
            said = "hello answered"
        else:
            said = f"hello answered error {hello['error'].get('code')}"
        got = f"{said}, startup posture {posture}: " + evidence_text(ev) + "; " + audit_text(ev)
        if hello == "ok":  # a member whose hello was answered: the session must start
            return ("PASS-CLIENT" if ev["started"] else "FAIL-CLIENT"), got, "a ServerHello starts the session"
        refused = isinstance(answer, dict) and (answer.get("error") or {}).get("code") == SESSION_REFUSED
        if ev["started"]:
            return "FAIL-CLIENT", got, "mnemo sent steps to a Guardian that gave no ServerHello"
        if refused:
            if ev["executed"] or ev["exit"] == 0:
                return "FAIL-CLIENT", got, "a refusal is a decision (4.1), yet mnemo went ahead"
            return "PASS-CLIENT", got, "a refusal is a decision (4.1): nothing started"
        unguarded = [a for a in ev["audit"] if a.get("event") == "started_unguarded"
                     and a.get("applied") == "proceeded_unguarded"]
        if posture == "proceed":
            if not (ev["executed"] and ev["exit"] == 0):
                return "FAIL-CLIENT", got, "startup posture proceed, yet mnemo did not start"
            if not unguarded:
                return "FAIL-CLIENT", got, "started unguarded with no record in the deployment's audit log (4.1)"
            return ("PASS-CLIENT", got, "posture proceed: started unguarded, and the deployment's audit "
                    "log records the unguarded start (4.1)")
        if ev["executed"] or ev["exit"] == 0:
            return "FAIL-CLIENT", got, "mnemo started a session with no ServerHello"
        return "PASS-CLIENT", got, "posture refuse: nothing started"

    if "applied" in p:
        if method != "steps/toolCallRequest" and method.startswith("steps/") and method != "steps/preCompact":
            if method == "steps/postCompact":
                return ("N/A-CLIENT", "not played",
                        "mnemo's client asks before compacting (preCompact) and sends no postCompact")
            return "N/A-CLIENT", "not played", f"mnemo's client sends no {method}"
        result = (p.get("response") or {}).get("result")
        if not isinstance(result, dict):
            return "N/A-CLIENT", "not played", "the member states no Guardian response to play"
        ev = observe_client(mnemo, tmp, transport,
                            decisive={k: v for k, v in result.items() if k != "request_id"})
        got = f"preCompact answered {result.get('decision')}: " + evidence_text(ev) + "; " + audit_text(ev)
        if ev["executed"] or ev["exit"] == 0:
            return "FAIL-CLIENT", got, "mnemo cannot apply a MODIFY, yet compacted"
        # ACS 6.5: received modify, applied deny, with modify_unsupported.
        recorded = any(a.get("received") == "modify" and a.get("applied") == "deny"
                       and "modify_unsupported" in (a.get("reason_codes") or []) for a in ev["audit"])
        if result.get("decision") == "modify" and not recorded:
            return "FAIL-CLIENT", got, "a MODIFY applied as deny with no audit record of it (6.5)"
        applied = p["applied"] if isinstance(p["applied"], dict) else {}
        if applied.get("action_executed") or applied.get("outcome") not in (None, "deny"):
            return ("PASS-CLIENT", got, "the member's agent ran the action; mnemo applied deny "
                    "(a compaction cannot apply a MODIFY), compacted nothing and recorded it")
        # The outcome (deny, nothing run) is the member's own; what tells it
        # from its siblings is the record, and for some the trace.
        trace = (p.get("trace") or {}).get("observed_agent") if isinstance(p.get("trace"), dict) else None
        if trace:
            return modify_trace(mnemo, tmp / "trace", transport, result, trace)
        return ("PASS-CLIENT", got, "the deployment's audit log records the substitution: received "
                "modify, applied deny, modify_unsupported (6.5), not the record the member rejects")

    if "trace_sink" in p:
        if p["trace_sink"] != "unreachable":
            return "N/A-CLIENT", "not played", f"trace sink '{p['trace_sink']}': only unreachable is played"
        # mnemo's trace endpoint (the flag) and the OTLP environment both
        # name a port nobody serves.
        dead = f"http://127.0.0.1:{free_port()}"
        want = p.get("guardian_decision", "allow")
        if want not in ("allow", "deny"):
            return "N/A-CLIENT", "not played", f"Guardian decision '{want}': only allow and deny are played"
        decisive = "allow" if want == "allow" else {"type": "final", "decision": "deny",
                                                    "reasoning": "fake: deny"}
        ev = observe_client(mnemo, tmp, transport, decisive=decisive,
                            postures={"trace_endpoint": dead},
                            env_extra={"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": dead,
                                       "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": dead + "/v1/traces"})
        disposition = "allow" if ev["executed"] and ev["exit"] == 0 else "deny"
        export = str((ev["audit"][-1] if ev["audit"] else {}).get("trace_export", "no trace_export"))
        got = (f"Guardian {want}, trace sink unreachable: disposition {disposition}, " + evidence_text(ev)
               + f"; {audit_text(ev)}, trace export {export}")
        if disposition != want:
            return "FAIL-CLIENT", got, "the disposition differs from the Guardian's decision"
        if not export.startswith("failed: "):
            return "FAIL-CLIENT", got, "the audit line does not record the failed trace export"
        return ("PASS-CLIENT", got, "the trace export to the unreachable sink was attempted and failed "
                "(recorded in the audit line); the disposition is the Guardian's")

    if "on_decision_failure" in p or ("guardian_response" in p and p["guardian_response"] is None):
        posture = p.get("on_decision_failure", "deny")
        if posture not in ("deny", "proceed"):
            return "N/A-CLIENT", "not played", f"on_decision_failure '{posture}': mnemo's are deny and proceed"
        ev = observe_client(mnemo, tmp, transport, decisive="silent",
                            postures={"on_decision_failure": posture})
        got = f"preCompact unanswered, on_decision_failure {posture}: " + evidence_text(ev) + "; " + audit_text(ev)
        if posture == "proceed":
            bypass = [a for a in ev["audit"] if a.get("event") == "proceeded_without_decision"
                      and a.get("applied") == "proceeded_unguarded" and a.get("received") == "no_answer"]
            if not (ev["executed"] and ev["exit"] == 0):
                return "FAIL-CLIENT", got, "on_decision_failure proceed, yet mnemo did not proceed"
            if not bypass:
                return "FAIL-CLIENT", got, "proceeded without a decision and without an audit event (6.4)"
            return ("PASS-CLIENT", got, "fail-open: proceeded without a decision, recorded as an audit "
                    "event (6.4)")
        if ev["executed"] or ev["exit"] == 0:
            return "FAIL-CLIENT", got, "mnemo proceeded without a decision"
        return "PASS-CLIENT", got, "fail closed: nothing compacted"

    if isinstance(p.get("guardian_response"), dict):
        body = str(p["guardian_response"].get("body", ""))
        # Over stdio there is no status line: the page is sent once, as a frame.
        statuses = (504, 200) if transport == "http" else (None,)
        evs = [observe_client(mnemo, tmp / str(status or "frame"), transport, decisive={
            "status": status, "content_type": "text/html", "body": body}) for status in statuses]
        got = "; ".join((f"preCompact answered HTTP {s} text/html: " if s else
                         "preCompact answered with the page as a frame: ") + evidence_text(ev) + ", "
                        + audit_text(ev) for s, ev in zip(statuses, evs))
        if any(ev["executed"] or ev["exit"] == 0 or not ev["asked"] for ev in evs):
            return "FAIL-CLIENT", got, "mnemo read a page as a decision"
        if not all(a.get("applied") == "deny" and a.get("received") in ("http_error", "not_json")
                   for ev in evs for a in ev["audit"][-1:]) or not all(ev["audit"] for ev in evs):
            return "FAIL-CLIENT", got, "the audit log does not record the page as no decision"
        return "PASS-CLIENT", got, "a gateway page is no decision (6.4): refused, nothing compacted"

    return "N/A-CLIENT", "not played", "no scenario the runner can play against mnemo's client"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def combine(guardian: str, client: str | None) -> str:
    """A row's status: the Guardian's where its answer passes (and mnemo's
    client did nothing the member forbids), else the client role's."""
    if client is None:
        return guardian
    if client == "FAIL-CLIENT":
        return client
    return guardian if guardian == "PASS" else client


def answer_alone_bound(members: list[dict]) -> dict:
    """Groups the reference runner's members by their requests (byte for
    byte as JSON, session_id aside): members of one group get the same
    answer from any Guardian that sees only the wire, so a group scores at
    most its larger verdict class."""
    groups: dict[str, list[dict]] = {}
    for m in members:
        reqs = []
        for s in steps_of(m):
            r = json.loads(json.dumps(s["request"]))
            if isinstance(r.get("metadata"), dict):
                r["metadata"].pop("session_id", None)
            if isinstance((r.get("params") or {}).get("metadata"), dict):
                r["params"]["metadata"].pop("session_id", None)
            reqs.append(r)
        groups.setdefault(json.dumps(reqs, sort_keys=True, separators=(",", ":")), []).append(m)
    scored, best, opposite = 0, 0, 0
    for ms in groups.values():
        verdicts = [m["expected"]["verdict"] for m in ms if m["expected"]["verdict"] != "unmeasurable"]
        scored += len(verdicts)
        counts = {v: verdicts.count(v) for v in set(verdicts)}
        best += max(counts.values(), default=0)
        if len(counts) > 1:
            opposite += len(verdicts)
    return {"members": len(members), "groups": len(groups), "opposite": opposite,
            "scored": scored, "max": best}


# ---- scoring ---------------------------------------------------------------

def observe(resp: dict) -> dict:
    if "error" in resp:
        return {"kind": "error", "code": resp["error"].get("code")}
    r = resp.get("result")
    if not isinstance(r, dict):
        return {"kind": "other"}
    if "negotiated_version" in r:
        return {"kind": "hello"}
    return {"kind": "decision", "decision": r.get("decision"), "reason_codes": r.get("reason_codes") or []}


def describe(o: dict) -> str:
    if o["kind"] == "error":
        return f"error {o['code']}"
    if o["kind"] == "hello":
        return "ServerHello"
    if o["kind"] == "decision":
        return o["decision"] or "?"
    return "no answer"


def step_expect_ok(exp: dict | None, resp: dict, previous_chain: str | None) -> bool:
    if not exp:
        return True
    if "http_status" in exp and resp.get("http_status") != exp["http_status"]:
        return False
    if exp.get("jsonrpc_answer") and not (resp.get("jsonrpc") == "2.0" and ("result" in resp or "error" in resp)):
        return False
    if "code" in exp and resp.get("error", {}).get("code") != exp["code"]:
        return False
    res = resp.get("result") if isinstance(resp.get("result"), dict) else {}
    if "decision" in exp and res.get("decision") != exp["decision"]:
        return False
    if exp.get("chain_advances"):
        # ACS §8.6: the response publishes the new chain head, and it moved.
        head = res.get("chain_hash")
        if not (isinstance(head, str) and len(head) == 64 and head != previous_chain):
            return False
    for c in exp.get("reason_codes_include", []):
        if c not in (res.get("reason_codes") or []):
            return False
    for c in exp.get("reason_codes_exclude", []):
        if c in (res.get("reason_codes") or []):
            return False
    for ptr, want in exp.get("result", {}).items():
        cur = res
        for part in ptr.strip("/").split("/"):
            if isinstance(cur, list) and part.isdigit():
                cur = cur[int(part)] if int(part) < len(cur) else None
            else:
                cur = cur.get(part) if isinstance(cur, dict) else None
        if cur != want:
            return False
    return True


def run_member(mnemo: str, member: dict, own: bool, transport: str, tmp: Path) -> tuple[str, str]:
    plan = plan_own(member, transport) if own else plan_corpus(member, transport)
    g = Guardian(mnemo, transport, plan["policy"], plan["keys"], plan["clock"], tmp, plan.get("store", "memory"))
    obs, sig_fail, step_fail = [], False, False
    chain = None
    try:
        for rq in plan["requests"]:
            if rq.get("restart"):
                g = g.restart()
                continue
            resp = g.send(rq["env"])
            label = rq["key"]
            if label and plan["keys"].get(label) is not None:
                session = rq["env"]["params"]["metadata"]["session_id"]  # signed: always a dict
                if not response_signature_ok(resp, session, plan["keys"][label], label):
                    sig_fail = True
            if not step_expect_ok(rq.get("expect"), resp, chain):
                step_fail = True
            res = resp.get("result")
            if isinstance(res, dict) and isinstance(res.get("chain_hash"), str):
                chain = res["chain_hash"]
            if not rq["setup"]:
                obs.append(observe(resp))
    finally:
        g.close()
    exp = member["expected"]
    got = " / ".join(describe(o) for o in obs)
    if exp["verdict"] == "unmeasurable":
        return "UNMEASURABLE", got
    if sig_fail:
        return "SIG-FAIL", got
    if step_fail:
        return "STEP-FAIL", got
    if exp["verdict"] == "allow":
        ok = all(o["kind"] == "hello" or (o["kind"] == "decision" and o["decision"] == "allow") for o in obs)
        return ("PASS" if ok else "FAIL"), got
    last = obs[-1]
    if exp["verdict"] == "modify":  # own members only: postCompact never denies
        return ("PASS" if last["kind"] == "decision" and last["decision"] == "modify" else "FAIL"), got
    refused = last["kind"] == "error" or (last["kind"] == "decision" and last["decision"] in ("deny", "defer"))
    if not refused:
        return "FAIL", got
    if exp.get("codeValue") is not None and not (last["kind"] == "error" and last["code"] == exp["codeValue"]):
        return "FAIL-CODE", got
    return "PASS", got


def reference_sendable(member: dict) -> bool:
    """Whether the standard's own runner (`run-acs-core-vectors.py`) puts the
    member on the wire: every step in the corpus's older shorthand, whose
    methods it maps (`hooks/toolCallRequest`, `handshake/hello`)."""
    steps = steps_of(member)
    return bool(steps) and all(s["request"].get("method") in LEGACY_METHODS for s in steps)


def load_members(corpus: Path | None, own: Path) -> list[tuple[dict, bool]]:
    out = []
    if corpus:
        manifest = json.loads((corpus / "MANIFEST.json").read_text())
        for e in manifest["vectors"]:
            m = json.loads((corpus / e["file"]).read_text())
            if steps_of(m) is not None:
                out.append((m, False))
    for f in sorted(own.glob("*.json")):
        out.append((json.loads(f.read_text()), True))
    return out


HEADER = ("# vector id\thttp\tstdio\treason (statuses written by run_vectors.py --update, reasons "
          "kept; a change here is a reviewed change; every row that does not PASS names its reason, "
          "see docs/guardian.md; PASS-CLIENT / N/A-CLIENT / FAIL-CLIENT: the member judges the Observed "
          "Agent and was scored by its scenario played against mnemo's client, not by the Guardian's answer)")


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--fake-stdio-guardian":
        return fake_stdio_guardian(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mnemo", required=True)
    ap.add_argument("--corpus", type=Path)
    ap.add_argument("--own", type=Path, required=True)
    ap.add_argument("--expected", type=Path, required=True)
    ap.add_argument("--tmp", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / f"mnemo-acs-{os.getpid()}")
    ap.add_argument("--only", action="append", default=[], help="run only this member id (repeatable)")
    ap.add_argument("--update", action="store_true", help="rewrite the statuses of the expectation file")
    a = ap.parse_args()
    if a.corpus and not (a.corpus / "MANIFEST.json").is_file():
        print(f"run_vectors: no MANIFEST.json under {a.corpus}", file=sys.stderr)
        return 2
    members = load_members(a.corpus, a.own)
    bound = answer_alone_bound([m for m, own in members if not own and reference_sendable(m)])
    if a.only:
        members = [(m, o) for m, o in members if m["id"] in a.only]
    expected, reasons = {}, {}
    if a.expected.is_file():
        for n, line in enumerate(a.expected.read_text().splitlines(), 1):
            if line and not line.startswith("#"):
                cols = line.split("\t")
                if len(cols) < 3:
                    print(f"run_vectors: {a.expected}:{n}: expected id, http, stdio[, reason]", file=sys.stderr)
                    return 2
                expected[cols[0]] = (cols[1], cols[2])
                reasons[cols[0]] = cols[3] if len(cols) > 3 else ""
    rows, drift = [], []
    for m, own in members:
        got = {}
        for t in ("http", "stdio"):
            got[t] = run_member(a.mnemo, m, own, t, a.tmp / m["id"] / t)
        client = None
        if not own and judges_client(m):
            # The client role, per transport: mnemo gate --guardian-url
            # against a FakeGuardian, --guardian-cmd running a
            # FakeStdioGuardian.
            client = {t: client_replay(a.mnemo, m, a.tmp / m["id"] / f"client-{t}", t)
                      for t in ("http", "stdio")}
            for t in ("http", "stdio"):
                got[t] = (combine(got[t][0], client[t][0]), got[t][1])
        e = m["expected"]
        exp = e["verdict"] + (f" {e['code']} ({e['codeValue']})" if e.get("code") else "")
        ref = (not own) and reference_sendable(m)
        rows.append((m["id"], "own" if own else ("corpus*" if ref else "corpus"), m.get("family", ""), exp, got,
                     client))
        want = expected.get(m["id"])  # rows of members not run here are not compared
        now = (got["http"][0], got["stdio"][0])
        if want != now:
            drift.append((m["id"], want, now))
    print("corpus* = a member the standard's reference runner sends; got = the Guardian's answers; "
          "client role = the member's scenario played against mnemo's client (mnemo gate "
          "--guardian-url / --guardian-cmd, a fake Guardian of the runner's); reason: from expected.tsv")
    print()
    print("| vector | source | family | expected | got (http) | status | got (stdio) | status "
          "| client role (http) | client role (stdio) | reason |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for vid, src, fam, exp, got, client in rows:
        role = {t: f"{client[t][0]}: {client[t][1]} ({client[t][2]})" if client else ""
                for t in ("http", "stdio")}
        print(f"| {vid} | {src} | {fam} | {exp} | {got['http'][1]} | {got['http'][0]} | "
              f"{got['stdio'][1]} | {got['stdio'][0]} | {role['http']} | {role['stdio']} | "
              f"{reasons.get(vid, '')} |")
    for t in ("http", "stdio"):
        for src in ("corpus*", "corpus", "own"):
            sel = [r for r in rows if r[1] == src or (src == "corpus" and r[1] == "corpus*")]
            counts: dict[str, int] = {}
            for r in sel:
                counts[r[4][t][0]] = counts.get(r[4][t][0], 0) + 1
            name = {"corpus*": "corpus, sent by the reference runner", "corpus": "corpus, on the wire",
                    "own": "own"}[src]
            print(f"{t} {name}: {len(sel)} members: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for t in ("http", "stdio"):
        for src in ("corpus*", "corpus"):
            sel = [r for r in rows if r[5] and (r[1] == src or src == "corpus")]
            if sel:
                counts = {}
                for r in sel:
                    counts[r[5][t][0]] = counts.get(r[5][t][0], 0) + 1
                name = {"corpus*": "sent by the reference runner", "corpus": "on the wire"}[src]
                print(f"client role ({t}), corpus members {name} that judge the Observed Agent: {len(sel)}: "
                      + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if bound["members"]:
        print(f"answer alone: reference set {bound['members']} members, {bound['groups']} request groups, "
              f"{bound['opposite']} share their requests with a member expecting the opposite verdict, "
              f"best score by the answer alone {bound['max']} of {bound['scored']} scored")
    unexplained = [r[0] for r in rows
                   if any(r[4][t][0] not in ("PASS", "UNMEASURABLE") for t in ("http", "stdio"))
                   and not reasons.get(r[0])]
    if a.update:
        for r in rows:
            expected[r[0]] = (r[4]["http"][0], r[4]["stdio"][0])
        lines = [HEADER]
        lines += [f"{k}\t{v[0]}\t{v[1]}" + (f"\t{reasons[k]}" if reasons.get(k) else "")
                  for k, v in sorted(expected.items())]
        a.expected.write_text("\n".join(lines) + "\n")
    for vid in unexplained:
        print(f"NO REASON {vid}: a row that does not PASS needs a reason in {a.expected}", file=sys.stderr)
    if a.update:
        return 1 if unexplained else 0
    for vid, was, now in drift:
        print(f"DRIFT {vid}: expected {was}, got {now}", file=sys.stderr)
    return 1 if drift or unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
