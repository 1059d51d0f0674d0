#!/usr/bin/env bash
# Whole-process wall time of the Claude Code PreCompact hook on a 1,000-entry
# transcript (hyperfine subtracts its shell's own start-up time): with the
# default SQLite session store (every run records its decision and chain
# entry, so the store grows by one decision a run) and with --memory; the
# --memory hook with --no-trail (the Guardian only), with the trail (a
# manual compaction, which the policy allows, so the trail is built and
# printed), and, for scale, `mnemo --version` and `mnemo scrub` of a 1 KB
# file. Prints one median per command.
#
# Without hyperfine the script times the commands itself (RUNS runs each
# after WARMUP warm-up runs, from one Python process; its fork/exec cost is
# included, so medians are ~1 ms higher than hyperfine's).
# Usage: bench/guardian/hook-hyperfine.sh [path/to/mnemo] [entries]
# Env: RUNS (default 300), WARMUP (default 20).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mnemo="${1:-target/release/mnemo}"
n="${2:-1000}"
runs="${RUNS:-300}"
warmup="${WARMUP:-20}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 "$here/make-transcript.py" "$tmp" "$n" >/dev/null
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
h = json.load(open(f"{d}/hook-input.json"))
h["trigger"] = "manual"
json.dump(h, open(f"{d}/hook-manual.json", "w"))
# 1 KB of ordinary text with one secret-looking line
body = "The build passed; see logs/ci-2026-12-02.txt for details.\n" * 15
body += "export API_TOKEN=ghp_" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7c" + "\n"
open(f"{d}/one-kb.txt", "w").write(body[:1024])
PY
export MNEMO_HOME="$tmp/home"
names=(sqlite memory memory-no-trail memory-trail version scrub-1kb)
cmds=(
  "$mnemo hook claude-code pre-compact < $tmp/hook-input.json"
  "$mnemo hook claude-code pre-compact --memory < $tmp/hook-input.json"
  "$mnemo hook claude-code pre-compact --memory --no-trail < $tmp/hook-input.json"
  "$mnemo hook claude-code pre-compact --memory < $tmp/hook-manual.json"
  "$mnemo --version"
  "$mnemo scrub $tmp/one-kb.txt"
)
if command -v hyperfine >/dev/null 2>&1; then
  args=()
  for i in "${!names[@]}"; do args+=(-n "${names[$i]}" "${cmds[$i]}"); done
  hyperfine --warmup "$warmup" --runs "$runs" -i --export-json "$tmp/hook.json" "${args[@]}" >/dev/null
else
  echo "hyperfine not found: timing from Python (fork/exec included)" >&2
  python3 - "$tmp/hook.json" "$runs" "$warmup" "${names[@]}" -- "${cmds[@]}" <<'PY'
import json, statistics, subprocess, sys, time
out, runs, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rest = sys.argv[4:]
k = rest.index("--")
names, cmds = rest[:k], rest[k + 1:]
results = []
for name, cmd in zip(names, cmds):
    times = []
    for i in range(warmup + runs):
        t = time.perf_counter()
        subprocess.run(["/bin/sh", "-c", cmd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if i >= warmup:
            times.append(time.perf_counter() - t)
    results.append({"command": name, "median": statistics.median(times), "mean": statistics.fmean(times), "times": times})
json.dump({"results": results}, open(out, "w"))
PY
fi
python3 - "$tmp/hook.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f"{r['command']}: median {r['median']*1e3:.2f} ms, mean {r['mean']*1e3:.2f} ms, runs {len(r.get('times', []))}")
PY
ls "$tmp/home" >/dev/null
