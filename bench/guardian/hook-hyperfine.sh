#!/usr/bin/env bash
# Whole-process wall time of the Claude Code PreCompact hook on a 1,000-entry
# transcript (hyperfine subtracts its shell's own start-up time).
# Usage: bench/guardian/hook-hyperfine.sh [path/to/mnemo] [entries]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mnemo="${1:-target/release/mnemo}"
n="${2:-1000}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 "$here/make-transcript.py" "$tmp" "$n" >/dev/null
hyperfine --warmup 20 --runs 300 -i \
  "$mnemo hook claude-code pre-compact < $tmp/hook-input.json"
