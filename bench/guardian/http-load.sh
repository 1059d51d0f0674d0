#!/usr/bin/env bash
# HTTP load against `mnemo guard http` on loopback with wrk (or oha).
# Usage: bench/guardian/http-load.sh [path/to/mnemo] [seconds] [connections]
# Every request has a fresh request_id (replay protection stays on) and is a
# steps/userMessage with provenance, so each one is validated, recorded and
# chained. STORE=memory (default) or STORE=sqlite; THREADS=N wrk threads (2).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mnemo="${1:-target/release/mnemo}"
secs="${2:-10}"
conns="${3:-32}"
port="${PORT:-17717}"
tmp="$(mktemp -d)"
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
cat > "$tmp/policy.toml" <<'TOML'
[guardian]
check_timestamps = false
require_handshake = false
TOML
store_args=(--memory)
if [ "${STORE:-memory}" = sqlite ]; then store_args=(--store "$tmp/guardian.sqlite3"); fi
"$mnemo" --quiet guard http --listen "127.0.0.1:$port" --policy "$tmp/policy.toml" "${store_args[@]}" &
pid=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break; sleep 0.1; done
if command -v wrk >/dev/null; then
  wrk -t"${THREADS:-2}" -c"$conns" -d"${secs}s" --latency -s "$here/user-message.lua" "http://127.0.0.1:$port/"
elif command -v oha >/dev/null; then
  echo "oha: fixed body (replays answer -32005, still a full envelope check)" >&2
  oha -z "${secs}s" -c "$conns" -m POST -H 'Content-Type: application/json' -D "$here/user-message.json" "http://127.0.0.1:$port/"
else
  echo "install wrk or oha" >&2; exit 1
fi
