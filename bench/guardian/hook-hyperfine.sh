#!/usr/bin/env bash
# Whole-process wall time of the Claude Code PreCompact hook on a 1,000-entry
# transcript (hyperfine subtracts its shell's own start-up time): with the
# default SQLite session store (every run records its decision and chain
# entry, so the store grows by one decision a run) and with --memory.
# Usage: bench/guardian/hook-hyperfine.sh [path/to/mnemo] [entries]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mnemo="${1:-target/release/mnemo}"
n="${2:-1000}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 "$here/make-transcript.py" "$tmp" "$n" >/dev/null
export MNEMO_HOME="$tmp/home"
hyperfine --warmup 20 --runs 300 -i --export-json "$tmp/hook.json" \
  -n sqlite "$mnemo hook claude-code pre-compact < $tmp/hook-input.json" \
  -n memory "$mnemo hook claude-code pre-compact --memory < $tmp/hook-input.json"
python3 - "$tmp/hook.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f"{r['command']}: median {r['median']*1e3:.2f} ms, mean {r['mean']*1e3:.2f} ms")
PY
ls "$tmp/home" >/dev/null
