# The real agent hosts for the hook end-to-end tests (crates/mnemo-cli/tests/e2e_hosts.rs):
# Claude Code and Codex CLI from npm, pinned. Their native binaries come in
# optional platform packages (@anthropic-ai/claude-code-linux-x64,
# @openai/codex-linux-x64), which npm installs beside them. The tests drive
# them offline against a mock model server on loopback, inside `unshare -n`.
MNEMO_HOSTS_PREFIX="${MNEMO_HOSTS_PREFIX:-/opt/mnemo-hosts}"
if command -v npm >/dev/null 2>&1; then
    mkdir -p "$MNEMO_HOSTS_PREFIX"
    npm install --prefix "$MNEMO_HOSTS_PREFIX" --no-audit --no-fund --loglevel=error \
        '@anthropic-ai/claude-code@2.1.197' '@openai/codex@0.171.0' \
        || echo "hosts: npm install failed; the host end-to-end tests fail under CI=true"
else
    echo "hosts: npm not found; the host end-to-end tests fail under CI=true"
fi
export MNEMO_HOSTS_BIN="$MNEMO_HOSTS_PREFIX/node_modules/.bin"
