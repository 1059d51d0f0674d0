#!/bin/sh
# Drives the real OpenCode (`opencode run`) offline against the mock model
# server, a custom provider (`@ai-sdk/openai-compatible`, baseURL on
# loopback) whose model has a 2,000-token context, so that a turn the mock
# reports as 1,000,000 tokens (`BIG`) makes OpenCode compact the session.
# mnemo's plugin (integrations/opencode/index.js) is named in opencode.json.
# Run inside `unshare -n` (only loopback up).
# Arguments: the opencode binary, the mnemo binary, a work directory.
# Environment: MNEMO_OPENCODE_PLUGIN_DEPS, the pre-installed
# `@opencode-ai/plugin` tree (.ci/setup.d/31-opencode.sh), copied into the
# config directory with an offline .npmrc: OpenCode npm-installs it there
# before it loads plugins, and offline that install would never end.
#
# Session "allow": the user states a constraint, a decision and a path, then
# BIG: the Guardian allows, the trail goes into the compaction prompt.
# Session "deny": the user asks to run a command (the mock calls OpenCode's
# bash tool: untrusted tool output after the last user message), then BIG:
# the Guardian denies, the plugin's throw stops the compaction.
set -u
OPENCODE="$1"; MNEMO="$2"; W="$3"; HERE="$(cd "$(dirname "$0")" && pwd)"
DEPS="${MNEMO_OPENCODE_PLUGIN_DEPS:-$(dirname "$OPENCODE")/../../plugin-deps}"
PLUGIN="$(cd "$HERE/../../../../integrations/opencode" && pwd)/index.js"
ip link set lo up
mkdir -p "$W/home/.config/opencode" "$W/proj"
cp -r "$DEPS/node_modules" "$DEPS/package.json" "$DEPS/package-lock.json" "$W/home/.config/opencode/" \
    || { echo "no plugin deps at $DEPS" > "$W/setup.err"; exit 3; }
printf 'offline=true\naudit=false\nfund=false\n' > "$W/home/.npmrc"
python3 "$HERE/mock_openai.py" "$W/port" "$W/requests.jsonl" &
MOCK=$!
i=0; while [ ! -s "$W/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
PORT=$(cat "$W/port")
cat > "$W/proj/opencode.json" <<JSON
{
  "\$schema": "https://opencode.ai/config.json",
  "provider": {
    "mock": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "mock",
      "options": {"baseURL": "http://127.0.0.1:$PORT/v1", "apiKey": "sk-mock"},
      "models": {"mock-model": {"name": "mock-model", "limit": {"context": 2000, "output": 100}}}
    }
  },
  "model": "mock/mock-model",
  "small_model": "mock/mock-model",
  "autoupdate": false,
  "share": "disabled",
  "plugin": ["file://$PLUGIN"]
}
JSON
printf 'the notes of this project\n' > "$W/proj/notes.md"
printf '[compaction]\nmanual_override = false\n' > "$W/policy.toml"
cat > "$W/mnemo" <<SH
#!/bin/sh
echo "\$*" >> "$W/mnemo.calls"
exec "$MNEMO" "\$@"
SH
chmod +x "$W/mnemo"
export HOME="$W/home" XDG_CONFIG_HOME="$W/home/.config" XDG_DATA_HOME="$W/home/.local/share" \
    XDG_CACHE_HOME="$W/home/.cache" XDG_STATE_HOME="$W/home/.local/state" \
    OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_DEFAULT_PLUGINS=1 OPENCODE_DISABLE_AUTOUPDATE=1 \
    MNEMO_BIN="$W/mnemo" MNEMO_POLICY="$W/policy.toml" MNEMO_STORE="$W/guardian.sqlite3"
cd "$W/proj"
run() {
    name="$1"; shift
    echo "== $name" >> "$W/requests.jsonl.marks"
    wc -l < "$W/requests.jsonl" >> "$W/requests.jsonl.marks"
    timeout 150 "$OPENCODE" run --print-logs "$@" > "$W/$name.out" 2> "$W/$name.err"
    echo $? > "$W/$name.rc"
}
run allow "Never push to main directly. We chose port 8443 for the API instead of 8080. Edit src/lib/config.rs next. BIG"
run deny "please run a command BIG"
kill $MOCK 2>/dev/null
