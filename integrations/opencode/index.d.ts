// Types of the module OpenCode loads: the plugin alone (see lib.d.ts).
import type { Plugin } from "./lib.d.ts";

export const MnemoPlugin: Plugin;
