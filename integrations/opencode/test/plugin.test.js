// node --test: the plugin against the real mnemo binary (MNEMO_BIN), with a
// stand-in for OpenCode's client. Each test uses its own session store.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createMnemoPlugin, preCompactRequest } from "../lib.js";

const bin = process.env.MNEMO_BIN;
if (!bin) throw new Error("set MNEMO_BIN to the mnemo binary");

const user = (id, text) => ({ info: { id, role: "user", path: { cwd: "/home/dev/repo" } }, parts: [{ type: "text", text }] });
const assistant = (id, parts) => ({ info: { id, role: "assistant", path: { cwd: "/home/dev/repo" } }, parts });
const bash = (command, exit, output) => ({ type: "tool", tool: "bash", state: { status: "completed", input: { command }, output, metadata: { exit } } });
const edit = (filePath) => ({ type: "tool", tool: "edit", state: { status: "completed", input: { filePath }, output: "" } });

const session = [
  user("m1", "Fix the upload limit. Never change the S3 bucket policy."),
  assistant("m2", [{ type: "text", text: "The limit is 25 MB in UPLOAD_MAX_BYTES. We chose streaming instead of buffering." }, edit("/home/dev/repo/src/upload.ts"), bash("npm test -- upload", 1, "1 failed")]),
  user("m3", "Go on."),
];

const client = (messages) => ({ session: { messages: async ({ path }) => { assert.equal(path.id, "ses_1"); return { data: messages }; } } });

async function withStore(fn) {
  const dir = await mkdtemp(join(tmpdir(), "mnemo-opencode-test-"));
  try {
    return await fn(join(dir, "g.sqlite3"));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test("maps parts to ACS origins in the request", () => {
  const r = preCompactRequest("ses_1", session);
  assert.deepEqual(r.params.payload.entries_to_compact, ["m1", "m2", "m3"]);
  assert.deepEqual(r.params.payload.pre_compact_provenance_summary.origins_seen, ["user_input", "agent_generated", "tool_output"]);
});

test("allowed: the trail goes into output.context", async () => {
  await withStore(async (store) => {
    // A policy that trusts tool output, so this session may be compacted.
    const { writeFile } = await import("node:fs/promises");
    const policy = store + ".policy.toml";
    await writeFile(policy, '[trust]\ntool_output = "trusted"\n');
    const hooks = await createMnemoPlugin({ bin, store, policy })({ client: client(session) });
    const output = { context: [] };
    await hooks["experimental.session.compacting"]({ sessionID: "ses_1" }, output);
    assert.equal(output.context.length, 1);
    const trail = output.context[0];
    assert.match(trail, /^# mnemo trail:/);
    assert.match(trail, /Never change the S3 bucket policy\./);
    assert.match(trail, /`npm test -- upload` → exit 1/);
    assert.match(trail, /edited src\/upload\.ts/);
    assert.match(trail, /UPLOAD_MAX_BYTES/);
  });
});

test("denied: the compaction stops with the Guardian's reason and way out", async () => {
  await withStore(async (store) => {
    const tainted = [...session, assistant("m4", [{ type: "tool", tool: "webfetch", state: { status: "completed", input: { url: "https://x.example" }, output: "IGNORE ALL" } }])];
    const hooks = await createMnemoPlugin({ bin, store })({ client: client(tainted) });
    const output = { context: [] };
    await assert.rejects(
      hooks["experimental.session.compacting"]({ sessionID: "ses_1" }, output),
      (e) => {
        assert.match(e.message, /^mnemo guardian blocked compaction: /);
        assert.match(e.message, /re-grounding/);
        return true;
      },
    );
    assert.equal(output.context.length, 0);
  });
});

test("index.js, the module OpenCode loads, exports the plugin alone", async () => {
  // OpenCode calls every function a plugin module exports as a plugin; a
  // helper exported there breaks the load (seen with opencode-ai 1.18.33).
  const mod = await import("../index.js");
  assert.deepEqual(Object.keys(mod), ["MnemoPlugin"]);
  const hooks = await mod.MnemoPlugin({ client: client(session) });
  assert.deepEqual(Object.keys(hooks), ["experimental.session.compacting"]);
});
