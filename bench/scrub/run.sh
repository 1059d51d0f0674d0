#!/usr/bin/env bash
# Side-by-side benchmark of mnemo's scrubber against Kingfisher 2.14 (-j 1)
# and detect-secrets 1.5 on the same ~50 MB corpus of local sources.
#
#   bash bench/scrub/run.sh            # build, fetch peers, build corpus, run
#   bash bench/scrub/run.sh BINARY     # measure a prebuilt binary instead of
#                           # building: the crate's scrub_file example (over
#                           # the corpus directory) or the mnemo CLI (`mnemo
#                           # --quiet scrub --audit` over the corpus as one
#                           # file, streamed), e.g. target/measure/mnemo
#   CORPUS_MB=20 RUNS=3 bash bench/scrub/run.sh
#   TOOLS="mnemo kingfisher" ...  # re-measure only these, keep the others'
#                                 # previous results (detect-secrets takes minutes;
#                                 # a tool never measured is left out of the table)
#   MNEMO_BUILD_CLI=0 ...   # skip building the mnemo CLI (the scrubber itself
#                           # is measured through the crate's scrub_file example)
#
# Everything goes to bench/out/ (git-ignored scratch): a venv with the two
# peers (pip), the corpus, raw outputs and results.md.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="$ROOT/bench/out"
CORPUS="$OUT/corpus"
RUNS="${RUNS:-3}"
DS_RUNS="${DS_RUNS:-$RUNS}"   # detect-secrets is slow (minutes per run)
# tools to (re-)measure; a tool left out keeps its result of the previous run
TOOLS="${TOOLS:-mnemo kingfisher detect-secrets}"
CORPUS_MB="${CORPUS_MB:-50}"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
mkdir -p "$OUT"

# MODE: "example" (scrub_file over the corpus directory) or "cli" (mnemo
# scrub --audit over the corpus concatenated into one file)
MODE=example
MNEMO_BIN=""
if [ -n "${1:-}" ]; then
  PREBUILT="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
  [ -x "$PREBUILT" ] || { echo "not an executable: $1" >&2; exit 2; }
  if "$PREBUILT" scrub --help 2>/dev/null | grep -q -- "--audit"; then
    MODE=cli; MNEMO_BIN="$PREBUILT"
  else
    SCRUB_FILE="$PREBUILT"
  fi
  echo "== measuring the prebuilt $PREBUILT ($MODE)" >&2
else
  echo "== building mnemo (release)" >&2
  (cd "$ROOT" && cargo build --release -q -p mnemo-scrub --example scrub_file)
  SCRUB_FILE="$TARGET_DIR/release/examples/scrub_file"
  if [ "${MNEMO_BUILD_CLI:-1}" = 1 ] && (cd "$ROOT" && cargo build --release -q -p mnemo-cli 2>/dev/null) \
      && [ -x "$TARGET_DIR/release/mnemo" ] \
      && "$TARGET_DIR/release/mnemo" scrub --help 2>/dev/null | grep -q -- "--audit"; then
    MNEMO_BIN="$TARGET_DIR/release/mnemo"
  fi
fi

echo "== installing peers into $OUT/venv (pip)" >&2
has() { [[ " $TOOLS " == *" $1 "* ]]; }
if { has kingfisher || has detect-secrets; } \
    && { [ ! -x "$OUT/venv/bin/kingfisher" ] || [ ! -x "$OUT/venv/bin/detect-secrets" ]; }; then
  python3 -m venv "$OUT/venv"
  "$OUT/venv/bin/pip" install -q --disable-pip-version-check "kingfisher-bin" "detect-secrets==1.5.*"
fi
KF="$OUT/venv/bin/kingfisher"
DS="$OUT/venv/bin/detect-secrets"

echo "== building the corpus ($CORPUS_MB MB of cargo registry sources)" >&2
if [ ! -f "$CORPUS/.done-$CORPUS_MB" ]; then
  rm -rf "$CORPUS" && mkdir -p "$CORPUS"
  python3 - "$CORPUS" "$CORPUS_MB" <<'PY'
import os, shutil, sys, glob
out, mb = sys.argv[1], int(sys.argv[2])
limit = mb * 1024 * 1024
exts = {'.rs', '.toml', '.md', '.json', '.txt', '.yml', '.yaml', '.c', '.h', '.py', '.sh', '.js', '.lock', '.html', '.cfg', '.in'}
roots = sorted(glob.glob(os.path.expanduser('~/.cargo/registry/src/*')))
total = 0
for root in roots:
    for d, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(d, f)
            if os.path.splitext(f)[1] not in exts or os.path.islink(p):
                continue
            size = os.path.getsize(p)
            if size == 0 or size > 2_000_000:
                continue
            rel = os.path.relpath(p, root).replace(os.sep, '__')
            shutil.copyfile(p, os.path.join(out, rel))
            total += size
            if total >= limit:
                print(total); sys.exit(0)
print(total)
if total < limit:
    sys.exit("not enough sources in ~/.cargo/registry/src (build the workspace first)")
PY
  touch "$CORPUS/.done-$CORPUS_MB"
fi
BYTES=$(find "$CORPUS" -type f ! -name '.done-*' -printf '%s\n' | awk '{s+=$1} END {print s}')
FILES=$(find "$CORPUS" -type f ! -name '.done-*' | wc -l)
echo "corpus: $FILES files, $BYTES bytes" >&2
CORPUS_FILE="$OUT/corpus-$CORPUS_MB.txt"
if [ "$MODE" = cli ] && [ ! -f "$CORPUS_FILE" ]; then
  # the same files in the same (sorted path) order as scrub_file reads them
  find "$CORPUS" -type f ! -name '.done-*' -print0 | LC_ALL=C sort -z | xargs -0 cat > "$CORPUS_FILE"
fi

# one core for every tool: single-thread throughput (detect-secrets would
# otherwise fork one scanner per core)
PIN=""
if command -v taskset > /dev/null 2>&1; then PIN="taskset -c 0"; fi

now() { date +%s.%N; }
TIMEBIN=""
if [ -x /usr/bin/time ]; then TIMEBIN=/usr/bin/time; fi
# timed CMD...: runs CMD; writes "<wall seconds> <cpu seconds (user+sys)>"
# to $OUT/.timing
timed() {
  local t0 t1 cpu="nan"
  t0=$(now)
  if [ -n "$TIMEBIN" ]; then
    "$TIMEBIN" -f "%U %S" -o "$OUT/.time" "$@"
    cpu=$(awk 'NF == 2 {print $1 + $2}' "$OUT/.time" | tail -1)
  else
    "$@"
  fi
  t1=$(now)
  echo "$(calc "$t1 - $t0") $cpu" > "$OUT/.timing"
}
calc() { python3 -c "print(round($1, 2))"; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

run_mnemo() {
  if [ "$MODE" = cli ]; then
    timed $PIN "$MNEMO_BIN" --quiet scrub --audit "$CORPUS_FILE" > "$OUT/mnemo.findings"
    echo "findings=$(wc -l < "$OUT/mnemo.findings")" > "$OUT/mnemo.txt"
  else
    timed $PIN "$SCRUB_FILE" "$CORPUS" > "$OUT/mnemo.txt"
    sed -n 's/.*scan_seconds=\([0-9.]*\).*/\1/p' "$OUT/mnemo.txt" >> "$OUT/mnemo-scan.txt"
  fi
  cat "$OUT/.timing"
}
run_kf() {
  timed $PIN "$KF" scan "$CORPUS" --no-validate --no-update-check --git-history none --no-dedup -j 1 \
      --format json -o "$OUT/kingfisher.json" > "$OUT/kingfisher.log" 2>&1
  sed -n 's/.*"scan_duration":\([0-9.]*\).*/\1/p' "$OUT/kingfisher.log" | tail -1 >> "$OUT/kingfisher-scan.txt"
  cat "$OUT/.timing"
}
run_ds() {
  (cd "$CORPUS" && timed $PIN "$DS" scan --all-files . > "$OUT/detect-secrets.json")
  cat "$OUT/.timing"
}

echo "== warm-up (page cache, Kingfisher rule cache)" >&2
run_mnemo > /dev/null; if has kingfisher; then run_kf > /dev/null; fi
: > "$OUT/kingfisher-scan.txt"; : > "$OUT/mnemo-scan.txt"

declare -A SECS
declare -A NOTE
declare -A TIMES
declare -A CPUS
declare -A CPU
measure() {
  case $1 in
    mnemo) run_mnemo ;;
    kingfisher) run_kf ;;
    detect-secrets) run_ds ;;
  esac
}
# interleaved rounds, so that load changes on a shared machine hit every tool
for round in $(seq "$RUNS"); do
  for tool in mnemo kingfisher detect-secrets; do
    [[ " $TOOLS " == *" $tool "* ]] || continue
    if [ "$tool" = detect-secrets ] && [ "$round" -gt "$DS_RUNS" ]; then continue; fi
    read -r wall cpu < <(measure "$tool")
    TIMES[$tool]="${TIMES[$tool]:-} $wall"
    CPUS[$tool]="${CPUS[$tool]:-} $cpu"
    echo "  $tool: wall $wall s, cpu $cpu s" >&2
  done
done
for tool in mnemo kingfisher detect-secrets; do
  if [ -n "${TIMES[$tool]:-}" ]; then
    SECS[$tool]=$(printf '%s\n' ${TIMES[$tool]} | median)
    CPU[$tool]=$(printf '%s\n' ${CPUS[$tool]} | median)
    echo "${SECS[$tool]} ${CPU[$tool]}" > "$OUT/$tool.seconds"
  elif [ -f "$OUT/$tool.seconds" ]; then
    read -r SECS[$tool] CPU[$tool] < "$OUT/$tool.seconds"; NOTE[$tool]=" (previous run)"
  else
    echo "no result for $tool (add it to TOOLS): left out" >&2
  fi
done

F_MNEMO=$(sed -n 's/.*findings=\([0-9]*\).*/\1/p' "$OUT/mnemo.txt")
F_KF=""; F_DS=""; KF_SCAN=""
if [ -n "${SECS[kingfisher]:-}" ]; then
  F_KF=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(len(d.get('findings', [])))" "$OUT/kingfisher.json")
  KF_SCAN=$(median < "$OUT/kingfisher-scan.txt")
fi
M_SCAN=$(median < "$OUT/mnemo-scan.txt")
if [ -n "${SECS[detect-secrets]:-}" ]; then
  F_DS=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sum(len(v) for v in d.get('results', {}).values()))" "$OUT/detect-secrets.json")
fi

mbps() { python3 -c "v = $BYTES / 1e6 / $1; print(round(v, 1) if v >= 1 else round(v, 3))"; }
cpumbps() { case "$1" in ""|nan) echo "n/a" ;; *) mbps "$1" ;; esac; }
ratio() { case "$1$2" in *n/a*) echo "n/a" ;; *) echo "$(calc "$1 / $2")x" ;; esac; }
M=$(mbps "${SECS[mnemo]}"); K=""; D=""
if [ -n "${SECS[kingfisher]:-}" ]; then K=$(mbps "${SECS[kingfisher]}"); fi
if [ -n "${SECS[detect-secrets]:-}" ]; then D=$(mbps "${SECS[detect-secrets]}"); fi
MC=$(cpumbps "${CPU[mnemo]:-}"); KC=$(cpumbps "${CPU[kingfisher]:-}"); DC=$(cpumbps "${CPU[detect-secrets]:-}")
{
  echo "corpus: $FILES files, $BYTES bytes (cargo registry sources); median of $RUNS interleaved runs (detect-secrets: ${NOTE[detect-secrets]:-$DS_RUNS run(s)}), ${PIN:-unpinned}"
  echo "MB/s = corpus bytes / wall-clock seconds of the whole process (start-up included); CPU MB/s = bytes / (user+sys) seconds"
  echo
  echo "| tool | MB/s (wall) | MB/s (CPU) | findings | mnemo speed-up (wall / CPU) |"
  echo "|---|---:|---:|---:|---:|"
  echo "| mnemo ($([ "$MODE" = cli ] && echo "mnemo scrub --audit, one file" || echo "mnemo-scrub, streaming"))${NOTE[mnemo]:-} | $M | $MC | $F_MNEMO | 1.0x / 1.0x |"
  if [ -n "$K" ]; then
    echo "| Kingfisher 2.14 (-j 1)${NOTE[kingfisher]:-} | $K | $KC | $F_KF | $(ratio "$M" "$K") / $(ratio "$MC" "$KC") |"
  fi
  if [ -n "$D" ]; then
    echo "| detect-secrets 1.5${NOTE[detect-secrets]:-} | $D | $DC | $F_DS | $(ratio "$M" "$D") / $(ratio "$MC" "$DC") |"
  fi
  if [ -n "$KF_SCAN" ]; then
    echo
    echo "Scan only (start-up excluded, medians): Kingfisher's own scan_duration ${KF_SCAN}s = $(mbps "$KF_SCAN") MB/s"
    if [ -n "$M_SCAN" ]; then
      echo "vs mnemo scan_seconds ${M_SCAN}s = $(mbps "$M_SCAN") MB/s: mnemo speed-up $(ratio "$(mbps "$M_SCAN")" "$(mbps "$KF_SCAN")") (mnemo whole process vs Kingfisher scan only: $(ratio "$M" "$(mbps "$KF_SCAN")"))"
    fi
  fi
  if [ -n "$MNEMO_BIN" ]; then echo; echo "(mnemo CLI with scrub --audit available at $MNEMO_BIN)"; fi
} | tee "$OUT/results.md"
