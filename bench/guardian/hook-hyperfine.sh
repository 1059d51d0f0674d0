#!/usr/bin/env bash
# Whole-process wall time of the PreCompact hooks on a 1,000-entry
# transcript, one median per path (hyperfine subtracts its shell's own
# start-up time). Every path is checked before it is timed (the script stops
# when a hook does not take the path its name says):
#
#   claude-deny-memory         Claude Code, auto compaction the policy denies, --memory
#   claude-deny-memory-no-trail  the same with --no-trail (a deny builds no trail either way)
#   claude-deny-sqlite         the same with the default SQLite store (each run records
#                              its decision and chain entry: the store grows a decision a run)
#   claude-allow-memory        Claude Code, manual compaction (allowed), --memory, the trail
#                              built and printed; under the default policy (manual_override)
#                              no line still to come can turn it, so it does not wait for
#                              the host's transcript queue (SETTLE; docs/guardian.md
#                              "Which allows wait")
#   claude-allow-memory-no-trail  the same without the trail
#   codex-deny-memory          Codex CLI, auto compaction denied, --memory
#   codex-allow-memory         Codex CLI, manual compaction allowed, --memory, trail built
#                              (Codex writes its rollout synchronously: no settle)
#   codex-allow-memory-no-trail  the same without the trail
#   version, scrub-1kb         for scale: `mnemo --version`, `mnemo scrub` of a 1 KB file
#
# Without hyperfine the script times the commands itself (RUNS runs each
# after WARMUP warm-up runs, from one Python process; its fork/exec cost is
# included, so medians are ~1 ms higher than hyperfine's).
# Usage: bench/guardian/hook-hyperfine.sh [path/to/mnemo] [entries] [name-regex]
# Env: RUNS (default 300), SLOW_RUNS (paths marked slow, none at present,
# default 30), WARMUP (default 20). CALLGRIND=1: instead of timing, runs
# each checked path once under `valgrind --tool=callgrind` and prints its
# instruction count (Ir, whole process; repeatable under load). COUNTS=1:
# instead of timing, runs each checked path COUNTS_RUNS times (default 20)
# under GNU time and prints the medians of its page faults and peak RSS
# (the process itself, no shell), also repeatable under load.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mnemo="${1:-target/release/mnemo}"
n="${2:-1000}"
only="${3:-.}"
runs="${RUNS:-300}"
slow_runs="${SLOW_RUNS:-30}"
warmup="${WARMUP:-20}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 "$here/make-transcript.py" "$tmp" "$n" >/dev/null
python3 "$here/make-codex-rollout.py" "$tmp" "$n" >/dev/null
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
h = json.load(open(f"{d}/hook-input.json"))
h["trigger"] = "manual"
json.dump(h, open(f"{d}/hook-manual.json", "w"))
# the auto compaction: an untrusted web fetch after the last user message
with open(h["transcript_path"], "a") as f:
    f.write(json.dumps({"type": "assistant", "uuid": "00000000-0000-4000-8000-900000000001", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_last", "name": "WebFetch", "input": {"url": "https://example.com/last"}}]}}) + "\n")
    f.write(json.dumps({"type": "user", "uuid": "00000000-0000-4000-8000-900000000002", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_last", "content": "fetched page"}]}}) + "\n")
# 1 KB of ordinary text with one secret-looking line
body = "The build passed; see logs/ci-2026-12-02.txt for details.\n" * 15
body += "export API_TOKEN=ghp_" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7c" + "\n"
open(f"{d}/one-kb.txt", "w").write(body[:1024])
PY
export MNEMO_HOME="$tmp/home"
cc="$mnemo hook claude-code pre-compact"
cx="$mnemo hook codex pre-compact"
# name | expected path (deny-exit2, deny-codex, allow, any) | slow (waits for SETTLE) | command
specs=(
  "claude-deny-memory|deny-exit2|0|$cc --memory < $tmp/hook-input.json"
  "claude-deny-memory-no-trail|deny-exit2|0|$cc --memory --no-trail < $tmp/hook-input.json"
  "claude-deny-sqlite|deny-exit2|0|$cc < $tmp/hook-input.json"
  "claude-allow-memory|allow-trail|0|$cc --memory < $tmp/hook-manual.json"
  "claude-allow-memory-no-trail|allow|0|$cc --memory --no-trail < $tmp/hook-manual.json"
  "codex-deny-memory|deny-codex|0|$cx --memory < $tmp/codex-auto.json"
  "codex-allow-memory|allow-trail|0|$cx --memory < $tmp/codex-manual.json"
  "codex-allow-memory-no-trail|allow|0|$cx --memory --no-trail < $tmp/codex-manual.json"
  "version|any|0|$mnemo --version"
  "scrub-1kb|any|0|$mnemo scrub $tmp/one-kb.txt"
)
names=()
cmds=()
slow=()
for s in "${specs[@]}"; do
  IFS='|' read -r name want isslow cmd <<<"$s"
  [[ "$name" =~ $only ]] || continue
  set +e
  sh -c "$cmd" >"$tmp/out" 2>"$tmp/err"
  code=$?
  set -e
  ok=1
  case "$want" in
    deny-exit2) [ "$code" = 2 ] && grep -q "blocked compaction" "$tmp/err" || ok=0 ;;
    deny-codex) [ "$code" = 0 ] && grep -q '"continue":false' "$tmp/out" || ok=0 ;;
    allow) [ "$code" = 0 ] && ! grep -q "blocked compaction" "$tmp/err" && [ ! -s "$tmp/out" ] || ok=0 ;;
    allow-trail) [ "$code" = 0 ] && ! grep -q "blocked compaction" "$tmp/err" && [ -s "$tmp/out" ] || ok=0 ;;
  esac
  if [ "$ok" = 0 ]; then
    echo "$name: expected path $want, got exit $code; stdout: $(head -c 300 "$tmp/out"); stderr: $(head -c 300 "$tmp/err")" >&2
    exit 1
  fi
  echo "$name: path $want checked (exit $code)" >&2
  names+=("$name")
  cmds+=("$cmd")
  slow+=("$isslow")
done
if [ -n "${CALLGRIND:-}" ]; then
  for i in "${!names[@]}"; do
    set +e
    sh -c "valgrind --tool=callgrind --callgrind-out-file=$tmp/cg$i ${cmds[$i]}" >/dev/null 2>&1
    set -e
    ir="$(awk '/^(summary|totals):/ {print $2; exit}' "$tmp/cg$i")"
    echo "${names[$i]}: $ir Ir"
  done
  exit 0
fi
if [ -n "${COUNTS:-}" ]; then
  # GNU time (/usr/bin/time) forks a small process: its child's peak RSS
  # is the command's own (a child of Python would start from Python's).
  python3 - "$tmp" "${COUNTS_RUNS:-20}" "${names[@]}" -- "${cmds[@]}" <<'PY'
import os, shlex, statistics, subprocess, sys
tmp, runs = sys.argv[1], int(sys.argv[2])
rest = sys.argv[3:]
k = rest.index("--")
names, cmds = rest[:k], rest[k + 1:]
for name, cmd in zip(names, cmds):
    argv, _, inp = cmd.partition(" < ")
    faults, rss = [], []
    for _ in range(runs):
        stdin = open(inp.strip(), "rb") if inp else subprocess.DEVNULL
        subprocess.run(["/usr/bin/time", "-f", "%R %F %M", "-o", f"{tmp}/time"] + shlex.split(argv),
                       stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        minor, major, kb = open(f"{tmp}/time").read().split()[-3:]
        faults.append(int(minor) + int(major))
        rss.append(int(kb))
    print(f"{name}: page faults {statistics.median(faults):.0f}, max RSS {statistics.median(rss) / 1024:.1f} MB, runs {runs}")
PY
  exit 0
fi
if command -v hyperfine >/dev/null 2>&1; then
  : >"$tmp/all.jsonl"
  for i in "${!names[@]}"; do
    r="$runs"
    [ "${slow[$i]}" = 1 ] && r="$slow_runs"
    # -i: a deny exits 2 (checked above); the shell is needed for `<`.
    hyperfine --warmup "$warmup" --runs "$r" -i --export-json "$tmp/h$i.json" -n "${names[$i]}" "${cmds[$i]}" >/dev/null
    cat "$tmp/h$i.json" >>"$tmp/all.jsonl"
    echo >>"$tmp/all.jsonl"
  done
  python3 - "$tmp/all.jsonl" "$tmp/hook.json" <<'PY'
import json, sys
res = []
dec = json.JSONDecoder()
text = open(sys.argv[1]).read()
i = 0
while i < len(text):
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text):
        break
    obj, i = dec.raw_decode(text, i)
    res += obj["results"]
json.dump({"results": res}, open(sys.argv[2], "w"))
PY
else
  echo "hyperfine not found: timing from Python (fork/exec included)" >&2
  python3 - "$tmp/hook.json" "$runs" "$slow_runs" "$warmup" "${names[@]}" -- "${slow[@]}" -- "${cmds[@]}" <<'PY'
import json, statistics, subprocess, sys, time
out, runs, slow_runs, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rest = sys.argv[5:]
k = rest.index("--")
names = rest[:k]
rest = rest[k + 1:]
k = rest.index("--")
slow, cmds = rest[:k], rest[k + 1:]
results = []
for name, s, cmd in zip(names, slow, cmds):
    times = []
    r = slow_runs if s == "1" else runs
    for i in range(warmup + r):
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
