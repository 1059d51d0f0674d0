#!/usr/bin/env bash
# Figures of issue 6: tool-call latency through the official MCP Python SDK,
# store/search throughput with 100,000 memories, database size per memory.
# Usage: bench/mcp/run.sh [MEMORIES]   (needs `python3 -m pip install mcp`)
# Results are printed and written to bench/mcp/results.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
n="${1:-100000}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
cargo build --release -p mnemo-cli --bin mnemo
cargo build --release -p mnemo-mcp --example store_bench
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "== store bench ($n memories)" >&2
store="$("$CARGO_TARGET_DIR/release/examples/store_bench" "$n" "$work/store")"
echo "$store"
echo "== tool-call latency (python mcp SDK $(python3 -c 'import importlib.metadata as m; print(m.version("mcp"))'))" >&2
latency="$(python3 bench/mcp/latency.py "$CARGO_TARGET_DIR/release/mnemo" 300)"
echo "$latency"
python3 - "$store" "$latency" <<'PY' > bench/mcp/results.json
import json, platform, subprocess, sys
print(json.dumps({
    "machine": f"{platform.machine()} {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores",
    "store": json.loads(sys.argv[1]),
    "latency": json.loads(sys.argv[2]),
}, indent=2))
PY
echo "== written bench/mcp/results.json" >&2
