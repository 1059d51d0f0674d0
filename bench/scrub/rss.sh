#!/usr/bin/env bash
# Peak memory of `mnemo scrub` against the input size: the stream scrub must
# stay flat (bounded buffer), whatever the size.
#
#   bash bench/scrub/rss.sh target/measure/mnemo           # 10, 100, 1000 MB
#   SIZES_MB="10 1000" bash bench/scrub/rss.sh BINARY
#
# The input is the cargo-registry corpus of run.sh (built by it, or from
# ~/.cargo/registry here) concatenated and repeated up to each size, piped
# to `mnemo --quiet scrub -` (output to /dev/null), so nothing large is
# written to disk. Peak RSS is /usr/bin/time's maximum resident set size of
# the mnemo process alone. Fails when the largest input's peak exceeds the
# smallest's by more than SLACK_MB (default 16).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="$ROOT/bench/out"
BIN="${1:-$ROOT/target/release/mnemo}"
SIZES_MB="${SIZES_MB:-10 100 1000}"
SLACK_MB="${SLACK_MB:-16}"
[ -x "$BIN" ] || { echo "usage: rss.sh MNEMO_BINARY (not executable: $BIN)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "rss.sh needs /usr/bin/time (GNU time)" >&2; exit 2; }
mkdir -p "$OUT"

# the seed: up to 20 MB of registry sources, in sorted path order
SEED="$OUT/rss-seed.txt"
if [ ! -s "$SEED" ]; then
  if [ -d "$OUT/corpus" ]; then
    find "$OUT/corpus" -type f ! -name '.done-*' -print0 | LC_ALL=C sort -z | xargs -0 cat | head -c 20000000 > "$SEED"
  else
    find ~/.cargo/registry/src -type f -name '*.rs' -size -2M -print0 | LC_ALL=C sort -z \
      | xargs -0 cat | head -c 20000000 > "$SEED"
  fi
fi
SEED_BYTES=$(stat -c %s "$SEED")
[ "$SEED_BYTES" -gt 1000000 ] || { echo "seed too small ($SEED_BYTES bytes)" >&2; exit 1; }

# repeat the seed up to $1 bytes
feed() {
  local want=$1
  while :; do cat "$SEED"; done 2>/dev/null | head -c "$want"
}

echo "| input | peak RSS | wall s | redactions |"
echo "|---:|---:|---:|---:|"
first=""; last=""
for mb in $SIZES_MB; do
  bytes=$((mb * 1000 * 1000))
  t0=$(date +%s.%N)
  feed "$bytes" | /usr/bin/time -f "%M" -o "$OUT/rss.time" "$BIN" scrub - 2> "$OUT/rss.err" > /dev/null
  t1=$(date +%s.%N)
  kb=$(tail -1 "$OUT/rss.time")
  n=$(grep -o '^[0-9]* redaction' "$OUT/rss.err" | grep -o '^[0-9]*' || echo "?")
  printf '| %s MB | %.1f MiB | %.1f | %s |\n' "$mb" "$(echo "$kb / 1024" | bc -l)" "$(echo "$t1 - $t0" | bc -l)" "$n"
  [ -n "$first" ] || first=$kb
  last=$kb
done
growth=$(( (last - first) / 1024 ))
echo
echo "peak RSS growth from the smallest to the largest input: ${growth} MiB (limit ${SLACK_MB} MiB)"
if [ "$growth" -gt "$SLACK_MB" ]; then
  echo "memory is not flat" >&2
  exit 1
fi
