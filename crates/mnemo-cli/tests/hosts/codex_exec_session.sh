#!/bin/sh
# Drives `codex exec` offline against the mock model server; run inside
# `unshare -n` (only loopback up). Arguments: the codex binary, the mnemo
# binary, a work directory. Hooks installed by `mnemo hook install codex
# --user` (trusted hashes), strict policy. e1: a web search (untrusted
# content); e2 (resumed): a command whose answer reports 1,000,000 tokens,
# so the mid-turn auto compaction runs and is denied. A wrapper named
# `mnemo` keeps the hooks' stdout and stderr.
set -u
CODEX="$1"; MNEMO="$2"; W="$3"; HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/codex_mock_setup.sh"
cat > "$W/bin/mnemo" <<SH
#!/bin/sh
"$MNEMO" "\$@" 2>>"$W/hook.stderr" | tee -a "$W/hook.stdout"
SH
chmod +x "$W/bin/mnemo"
printf '[compaction]\nmanual_override = false\n' > "$W/policy.toml"
export CODEX_HOME="$W/home" MOCK_API_KEY=sk-mock
"$MNEMO" hook install codex --user --bin "$W/bin/mnemo" --policy "$W/policy.toml" \
    --store "$W/guardian.sqlite3" > "$W/install.out" 2>&1
echo $? > "$W/install.rc"
cd "$W/proj"
run() { # name, args…
    n="$1"; shift
    timeout 120 "$CODEX" exec --skip-git-repo-check "$@" < /dev/null > "$W/$n.out" 2> "$W/$n.err"
    echo $? > "$W/$n.rc"
}
run e1 "please search the web"
run e2 resume --last "run a command BIG"
kill $MOCK 2>/dev/null
find "$W/home/sessions" -name '*.jsonl' > "$W/transcript_path" 2>/dev/null
