// Types of mnemo's OpenCode plugin's workings (lib.js) (the subset of @opencode-ai/plugin it uses).

/** One part of an OpenCode message. */
export type OpenCodePart =
  | { type: "text"; text: string; synthetic?: boolean }
  | {
      type: "tool";
      tool: string;
      state: {
        status: "pending" | "running" | "completed" | "error";
        input?: Record<string, unknown>;
        output?: string;
        error?: string;
        metadata?: { exit?: number } & Record<string, unknown>;
      };
    }
  | { type: string; [k: string]: unknown };

/** One OpenCode message as the plugin client returns it. */
export interface OpenCodeMessage {
  info: { id?: string; role: "user" | "assistant"; path?: { cwd?: string } };
  parts: OpenCodePart[];
}

/** Options of the plugin (each defaults to an environment variable). */
export interface MnemoOptions {
  /** The mnemo binary (MNEMO_BIN, default "mnemo"). */
  bin?: string;
  /** A Guardian's HTTP endpoint (MNEMO_GUARDIAN_URL); default `mnemo guard check`. */
  guardianUrl?: string;
  /** Guardian policy file (MNEMO_POLICY). */
  policy?: string;
  /** Guardian session store (MNEMO_STORE). */
  store?: string;
  /** Trail token budget (MNEMO_TRAIL_BUDGET, default 1500). */
  budget?: number;
}

/** The hooks this plugin registers. */
export interface Hooks {
  "experimental.session.compacting": (
    input: { sessionID: string },
    output: { context: string[]; prompt?: string },
  ) => Promise<void>;
}

/** OpenCode's plugin signature (the part of its context this plugin reads). */
export type Plugin = (ctx: { client: any; [k: string]: unknown }) => Promise<Hooks>;

export function originOf(role: string, part: unknown): string | null;
export function sessionUuid(id: string): string;
export function preCompactRequest(sessionID: string, messages: OpenCodeMessage[]): object;
export function createMnemoPlugin(options?: MnemoOptions): Plugin;
