#!/bin/sh
# `mnemo hook install codex --project` in a project Codex trusts, then asks
# the real `codex app-server` (`hooks/list`) how it sees the handlers; run
# inside `unshare -n` (only loopback up). Arguments: the codex binary, the
# mnemo binary, a work directory.
set -u
CODEX="$1"; MNEMO="$2"; W="$3"; HERE="$(cd "$(dirname "$0")" && pwd)"
ip link set lo up
mkdir -p "$W/home" "$W/proj"
cat > "$W/home/config.toml" <<TOML
# the user's own config
model = "mock-model"

[projects."$W/proj"]
trust_level = "trusted"
TOML
export CODEX_HOME="$W/home"
cd "$W/proj"
"$MNEMO" hook install codex --project --policy "$W/policy.toml" > "$W/install.out" 2>&1
echo $? > "$W/install.rc"
echo '[]' > "$W/steps.json"
timeout 120 python3 "$HERE/codex_appserver.py" "$CODEX" "$W/proj" "$W/steps.json" "$W/session.json"
echo $? > "$W/driver.rc"
