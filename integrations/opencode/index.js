// mnemo's OpenCode plugin: the module OpenCode loads (`"plugin":
// ["mnemo-opencode"]` or a path to this file in opencode.json).
//
// OpenCode calls every function a plugin module exports as a plugin (with
// its plugin context), so this module exports the plugin and nothing else;
// the helpers and `createMnemoPlugin(options)` are in lib.js. Configuration
// comes from the environment (MNEMO_BIN, MNEMO_GUARDIAN_URL, MNEMO_POLICY,
// MNEMO_STORE, MNEMO_TRAIL_BUDGET; see lib.js).

import { createMnemoPlugin } from "./lib.js";

/** The plugin with its configuration from the environment. */
export const MnemoPlugin = createMnemoPlugin();
