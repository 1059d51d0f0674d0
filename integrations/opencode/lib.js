// mnemo's OpenCode plugin, its workings (ES module, no dependencies, no
// network but the Guardian URL the user configures). OpenCode loads
// `index.js`, which exports the plugin alone: OpenCode calls every function a
// plugin module exports as a plugin, so the helpers live here.
//
// On `experimental.session.compacting` it
//   1. reads the session's messages through the plugin client,
//   2. asks mnemo's Guardian (`mnemo guard check`, or POST to a Guardian
//      URL) with a `steps/preCompact` request whose provenance summary maps
//      each part to its ACS origin,
//   3. when allowed, runs `mnemo trail --host opencode` over the messages and
//      pushes the trail into `output.context` (the compaction prompt),
//   4. when denied, throws an Error whose message is the Guardian's reason
//      and way out: OpenCode's plugin API has no deny, a throw is the only
//      way to stop the compaction.
//
// Configuration (environment, or the options argument of `createMnemoPlugin`):
//   MNEMO_BIN            the mnemo binary (default "mnemo" on PATH)
//   MNEMO_GUARDIAN_URL   a Guardian's HTTP endpoint (default: `mnemo guard check`)
//   MNEMO_POLICY         a Guardian policy file for `mnemo guard check`
//   MNEMO_TRAIL_BUDGET   the trail's token budget (default 1500)

import { spawn } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** @typedef {import("./lib.d.ts").MnemoOptions} MnemoOptions */
/** @typedef {import("./lib.d.ts").OpenCodeMessage} OpenCodeMessage */

/**
 * Runs a program with `input` on stdin; resolves with its stdout, stderr and status.
 * @param {string} bin
 * @param {string[]} args
 * @param {string} input
 * @returns {Promise<{code: number | null, stdout: string, stderr: string}>}
 */
function run(bin, args, input) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

/**
 * The ACS origin of one message part, by OpenCode's tool names.
 * @param {string} role
 * @param {any} part
 * @returns {string | null}
 */
export function originOf(role, part) {
  if (!part || typeof part !== "object") return null;
  if (part.type === "text") {
    if (part.synthetic) return "system";
    return role === "user" ? "user_input" : "agent_generated";
  }
  if (part.type === "tool") {
    const tool = String(part.tool ?? "");
    if (tool === "webfetch") return "retrieved";
    if (tool === "websearch") return "external";
    return "tool_output";
  }
  if (part.type === "file") return role === "user" ? "user_input" : "tool_output";
  return null;
}

/**
 * ACS wants a UUID session id; OpenCode's are `ses_…`: the same session
 * always maps to the same UUID (SHA-256, version 4 layout).
 * @param {string} id
 */
export function sessionUuid(id) {
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) return id.toLowerCase();
  const b = createHash("sha256").update(`opencode:${id}`).digest();
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const x = b.toString("hex");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}

/**
 * The `steps/preCompact` JSON-RPC request for a session's messages.
 * @param {string} sessionID
 * @param {OpenCodeMessage[]} messages
 * @returns {object}
 */
export function preCompactRequest(sessionID, messages) {
  /** @type {string[]} */
  const entries = [];
  /** @type {Record<string, string>} */
  const earliest = {};
  messages.forEach((m, i) => {
    const role = m?.info?.role ?? "";
    const step = String(m?.info?.id ?? `message-${i + 1}`);
    let counted = false;
    for (const p of Array.isArray(m?.parts) ? m.parts : []) {
      const o = originOf(role, p);
      if (!o) continue;
      if (!counted) {
        entries.push(step);
        counted = true;
      }
      if (!(o in earliest)) earliest[o] = step;
    }
  });
  if (entries.length === 0) entries.push(`${sessionID}:empty`);
  return {
    jsonrpc: "2.0",
    id: 1,
    method: "steps/preCompact",
    params: {
      acs_version: "0.1.0",
      request_id: randomUUID(),
      timestamp: new Date().toISOString(),
      metadata: { agent_id: "opencode", session_id: sessionUuid(sessionID) },
      payload: {
        entries_to_compact: entries,
        pre_compact_provenance_summary: {
          origins_seen: Object.keys(earliest),
          earliest_step_id_by_origin: earliest,
        },
        triggered_by: "size_threshold",
      },
    },
  };
}

/**
 * Asks the Guardian; resolves with the JSON-RPC result (`decision`, `reasoning`, …).
 * @param {object} request
 * @param {Required<Pick<MnemoOptions, "bin">> & MnemoOptions} opts
 */
async function ask(request, opts) {
  const body = JSON.stringify(request);
  let answer;
  if (opts.guardianUrl) {
    const res = await fetch(opts.guardianUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    answer = await res.json();
  } else {
    const args = ["guard", "check"];
    if (opts.policy) args.push("--policy", opts.policy);
    if (opts.store) args.push("--store", opts.store);
    const r = await run(opts.bin, args, body);
    try {
      answer = JSON.parse(r.stdout);
    } catch {
      throw new Error(`mnemo guard check gave no answer (exit ${r.code}): ${r.stderr.trim()}`);
    }
  }
  if (answer?.error) {
    throw new Error(`mnemo guardian refused the request: ${answer.error.message} (${JSON.stringify(answer.error.data ?? {})})`);
  }
  return answer?.result ?? {};
}

/**
 * The session's messages through the plugin client (SDK answers `{data}`).
 * @param {any} client
 * @param {string} sessionID
 * @returns {Promise<OpenCodeMessage[]>}
 */
async function messagesOf(client, sessionID) {
  const r = await client.session.messages({ path: { id: sessionID } });
  const data = Array.isArray(r) ? r : r?.data;
  return Array.isArray(data) ? data : [];
}

/**
 * Builds the plugin with explicit options (the environment fills the rest).
 * @param {MnemoOptions} [options]
 */
export function createMnemoPlugin(options = {}) {
  const env = process.env;
  const opts = {
    bin: options.bin ?? env.MNEMO_BIN ?? "mnemo",
    guardianUrl: options.guardianUrl ?? env.MNEMO_GUARDIAN_URL,
    policy: options.policy ?? env.MNEMO_POLICY,
    store: options.store ?? env.MNEMO_STORE,
    budget: options.budget ?? (Number(env.MNEMO_TRAIL_BUDGET) || 1500),
  };
  /** @type {import("./lib.d.ts").Plugin} */
  const plugin = async ({ client }) => ({
    "experimental.session.compacting": async (input, output) => {
      const messages = await messagesOf(client, input.sessionID);
      const decision = await ask(preCompactRequest(input.sessionID, messages), opts);
      if (decision.decision === "deny") {
        const how = decision.policy_data?.exit?.how;
        throw new Error(
          `mnemo guardian blocked compaction: ${decision.reasoning ?? "denied"}` +
            (how && !String(decision.reasoning ?? "").includes(how) ? ` Way out: ${how}.` : ""),
        );
      }
      const dir = await mkdtemp(join(tmpdir(), "mnemo-opencode-"));
      try {
        const file = join(dir, "session.jsonl");
        await writeFile(file, messages.map((m) => JSON.stringify(m)).join("\n") + "\n");
        const r = await run(opts.bin, ["trail", "--host", "opencode", "--budget", String(opts.budget), file], "");
        if (r.code === 0 && r.stdout.trim()) {
          output.context.push(r.stdout);
        } else if (r.code !== 0) {
          // The Guardian allowed: a missing trail must not stop the compaction.
          console.error(`mnemo trail failed (exit ${r.code}): ${r.stderr.trim()}`);
        }
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  });
  return plugin;
}

