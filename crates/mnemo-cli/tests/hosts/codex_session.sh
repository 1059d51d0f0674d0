#!/bin/sh
# Drives Codex CLI offline against the mock model server through
# `codex app-server`; run inside `unshare -n` (only loopback up).
# Arguments: the codex binary, the mnemo binary, a work directory.
# The hooks are installed with `mnemo hook install codex --user` (trusted
# hashes included); a wrapper named `mnemo` keeps their stderr.
set -u
CODEX="$1"; MNEMO="$2"; W="$3"; HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/codex_mock_setup.sh"
cat > "$W/bin/mnemo" <<SH
#!/bin/sh
exec "$MNEMO" "\$@" 2>>"$W/hook.stderr"
SH
chmod +x "$W/bin/mnemo"
STRICT='[compaction]\nmanual_override = false\n'
OVERRIDE='[compaction]\nmanual_override = true\n'
printf "$STRICT" > "$W/policy.toml"
export CODEX_HOME="$W/home" MOCK_API_KEY=sk-mock
"$MNEMO" hook install codex --user --bin "$W/bin/mnemo" --policy "$W/policy.toml" \
    --store "$W/guardian.sqlite3" > "$W/install.out" 2>&1
echo $? > "$W/install.rc"
cat > "$W/steps.json" <<JSON
[
 {"turn": "please search the web"},
 {"compact": true},
 {"compact": true},
 {"write": ["$W/policy.toml", "[compaction]\nmanual_override = true\n"]},
 {"compact": true},
 {"write": ["$W/policy.toml", "[compaction]\nmanual_override = false\n"]},
 {"turn": "run a command BIG"},
 {"turn": "hello again, go on"}
]
JSON
timeout 400 python3 "$HERE/codex_appserver.py" "$CODEX" "$W/proj" "$W/steps.json" "$W/session.json"
echo $? > "$W/driver.rc"
kill $MOCK 2>/dev/null
find "$W/home/sessions" -name '*.jsonl' > "$W/transcript_path" 2>/dev/null
