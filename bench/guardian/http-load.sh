#!/usr/bin/env bash
# HTTP load against `mnemo guard http` on loopback with wrk (or oha).
# Usage: bench/guardian/http-load.sh [path/to/mnemo] [seconds] [connections]
# Every request has a fresh request_id (replay protection stays on) and is a
# steps/userMessage with provenance, so each one is validated, recorded and
# chained. STORE=memory (default), STORE=sqlite, or STORE=postgres (the
# database in $MNEMO_BENCH_POSTGRES_URL, else $MNEMO_TEST_POSTGRES_URL);
# THREADS=N wrk threads (2). INSTANCES=2 starts two Guardians on the same
# store (ports PORT and PORT+1) and one wrk against each, at once;
# SAME_SESSION=1 makes both drive one session (serialised on its row lock),
# else each has its own. SESSIONS=N (1-100) makes each instance's requests
# cycle over N sessions instead of one (a team server; on PostgreSQL the
# decider threads take sessions by shard, so several batches commit at once).
# Each run (and each instance) gets a session id of its
# own, so a database that outlives runs never sees a replay of an earlier one.
# Prints the load average before and after, and each wrk's report.
# COUNTS=1 (one instance) also attaches `perf stat` to the server for the run
# and prints, per request: syscalls (all, and read/write/epoll_wait/futex…),
# context switches, and the server's CPU time (task-clock). The counts hold
# under load; the CPU time does not quite (cache and scheduler effects).
# STATS=1 turns on the server's own histograms (MNEMO_HTTP_STATS, one
# instance's): per request, first byte read -> answer written (request_us),
# waiting for the in-flight budget, handed to the decider -> answered; per
# batch its size and store time, and each batch slower than 10 ms with the
# requests decided before it. They count each request once, where wrk's
# Latency figures are corrected for coordinated omission (wrk adds, for a
# request that took L, samples L-i, L-2i, ... with i = run time / requests
# a connection: one 150 ms stall of every connection weighs ~2 % of the
# samples at 40k req/s, so wrk's p99 is the machine's and store's stalls).
# PIN=1 pins the server to CPU 0 and wrk to CPU 1 (taskset), to tell the
# server's tail from the two cores' scheduling.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mnemo="${1:-target/release/mnemo}"
secs="${2:-10}"
conns="${3:-32}"
port="${PORT:-17717}"
instances="${INSTANCES:-1}"
tmp="$(mktemp -d)"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"' EXIT
cat > "$tmp/policy.toml" <<'TOML'
[guardian]
check_timestamps = false
require_handshake = false
TOML
store_args=(--memory)
case "${STORE:-memory}" in
  memory) ;;
  sqlite) store_args=(--store "$tmp/guardian.sqlite3") ;;
  postgres)
    url="${MNEMO_BENCH_POSTGRES_URL:-${MNEMO_TEST_POSTGRES_URL:-}}"
    if [ -z "$url" ]; then echo "STORE=postgres: set MNEMO_BENCH_POSTGRES_URL (or MNEMO_TEST_POSTGRES_URL)" >&2; exit 1; fi
    store_args=(--store "$url") ;;
  *) echo "STORE=$STORE: memory, sqlite or postgres" >&2; exit 1 ;;
esac
if [ "$instances" -gt 1 ] && [ "${STORE:-memory}" = memory ]; then
  echo "INSTANCES>1 needs a shared store (sqlite or postgres)" >&2; exit 1
fi
# A session id unique to this run: 8-4-4-4-12 hex, the last group from the clock.
stamp="$(date +%s%N)"
session_of() { printf '7c9e6679-%04d-40de-944b-%012d' "$1" "$(( (stamp / 1000) % 1000000000000 ))"; }
srv_pin=(); wrk_pin=()
if [ "${PIN:-0}" = 1 ]; then srv_pin=(taskset -c 0); wrk_pin=(taskset -c 1); fi
for i in $(seq 0 $((instances - 1))); do
  if [ "${STATS:-0}" = 1 ] && [ "$i" = 0 ]; then
    MNEMO_HTTP_STATS=1 "${srv_pin[@]}" "$mnemo" --quiet guard http --listen "127.0.0.1:$((port + i))" --policy "$tmp/policy.toml" "${store_args[@]}" 2> "$tmp/stats" &
  else
    "${srv_pin[@]}" "$mnemo" --quiet guard http --listen "127.0.0.1:$((port + i))" --policy "$tmp/policy.toml" "${store_args[@]}" &
  fi
  pids+=($!)
done
for i in $(seq 0 $((instances - 1))); do
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$((port + i))/health" >/dev/null 2>&1 && break; sleep 0.1; done
done
# The settings that decide the figure, printed with it (2026-12-02's 30,537
# req/s on SQLite was a fat-LTO `target/release` build at load ~1; the same
# script on a `--profile measure` build gave half that: name the binary).
echo "binary: $mnemo ($(stat -c %s "$mnemo") bytes, sha256 $(sha256sum "$mnemo" | cut -c1-12)); $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "wrk -t${THREADS:-2} -c$conns -d${secs}s on the same cores; requests: user-message.lua (steps/userMessage, a fresh request_id each, validated, replay-checked, recorded, chained); ${SESSIONS:-1} session(s) per instance$([ "${SAME_SESSION:-0}" = 1 ] && echo ' (SAME_SESSION: the same for all)'); timestamps and handshake not checked"
case "${STORE:-memory}" in
  sqlite) echo "store sqlite: a fresh file, WAL, synchronous=NORMAL (a commit writes the WAL, no fsync; the background checkpoint, every 250 ms, fsyncs the WAL before copying it and the database after)" ;;
  postgres) echo "store postgres: synchronous_commit=$(psql "$url" -Atc 'SHOW synchronous_commit' 2>/dev/null || echo '?') fsync=$(psql "$url" -Atc 'SHOW fsync' 2>/dev/null || echo '?') (COMMIT waits for its WAL flush)" ;;
esac
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); store ${STORE:-memory}; instances $instances; -c$conns -d${secs}s"
# PostgreSQL: transactions committed during the run (pg_stat_database, which
# also counts any other client of the database), to tell requests a batch.
xacts() { psql "$url" -Atc 'SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()' 2>/dev/null || echo 0; }
[ "${STORE:-memory}" = postgres ] && x0="$(xacts)"
if command -v wrk >/dev/null; then
  if [ "${COUNTS:-0}" = 1 ]; then
    ev=raw_syscalls:sys_enter,context-switches,task-clock
    for sc in read write writev readv recvfrom sendto epoll_wait epoll_pwait epoll_ctl futex accept4 fsync fdatasync pwrite64 pread64 lseek fcntl; do
      ev="$ev,syscalls:sys_enter_$sc"
    done
    perf stat -x, -e "$ev" -p "${pids[0]}" -o "$tmp/perf" &
    perfpid=$!
  fi
  wpids=()
  for i in $(seq 0 $((instances - 1))); do
    if [ "${SAME_SESSION:-0}" = 1 ]; then s="$(session_of 0)"; else s="$(session_of "$i")"; fi
    SESSION="$s" INSTANCE="$i" SESSIONS="${SESSIONS:-1}" "${wrk_pin[@]}" wrk -t"${THREADS:-2}" -c"$conns" -d"${secs}s" --latency \
      -s "$here/user-message.lua" "http://127.0.0.1:$((port + i))/" > "$tmp/wrk.$i" &
    wpids+=($!)
  done
  for w in "${wpids[@]}"; do wait "$w"; done
  if [ "${COUNTS:-0}" = 1 ]; then
    kill -INT "$perfpid"; wait "$perfpid" || true
    reqs="$(awk '/requests in/ {s += $1} END {print s + 0}' "$tmp"/wrk.*)"
    echo "== server counts per request ($reqs requests; perf stat -p on the server during the run)"
    awk -F, -v r="$reqs" '$1 ~ /^[0-9.]+$/ && $1 > 0 {
      name = $3; sub(/^syscalls:sys_enter_/, "", name); sub(/^raw_syscalls:sys_enter/, "syscalls (all)", name)
      if (name == "task-clock") printf "  %-16s %10.2f us\n", "cpu (task-clock)", $1 * 1000 / r
      else printf "  %-16s %10.3f\n", name, $1 / r }' "$tmp/perf"
  fi
  for i in $(seq 0 $((instances - 1))); do echo "== instance $i (port $((port + i)))"; cat "$tmp/wrk.$i"; done
  if [ "${STATS:-0}" = 1 ]; then
    # The report thread prints every second: wait for the last one.
    sleep 1.2
    echo "== server histograms (instance 0; us or requests; totals of the run, /health probes included)"
    grep 'slow batch' "$tmp/stats" || echo "no batch slower than 10 ms"
    for h in request_us budget_us decide_us batch_size batch_us turn_size; do
      grep "http-stats t=.* $h " "$tmp/stats" | tail -1 | sed 's/.*| total: /  '"$h"': /'
    done
  fi
  if [ "${STORE:-memory}" = postgres ]; then
    # pg_stat_database lags by up to its flush interval: wait for it.
    sleep 1.2
    x1="$(xacts)"
    reqs="$(cat "$tmp"/wrk.* | awk '/requests in/ {s += $1} END {print s + 0}')"
    echo "postgres: $((x1 - x0)) transactions committed during the run (any client of the database), $reqs requests: $(awk -v r="$reqs" -v x="$((x1 - x0))" 'BEGIN {printf "%.1f", (x > 0 ? r / x : 0)}') requests a transaction"
  fi
elif command -v oha >/dev/null; then
  echo "oha: fixed body (replays answer -32005, still a full envelope check)" >&2
  oha -z "${secs}s" -c "$conns" -m POST -H 'Content-Type: application/json' -D "$here/user-message.json" "http://127.0.0.1:$port/"
else
  echo "install wrk or oha" >&2; exit 1
fi
if [ "${STORE:-memory}" = sqlite ]; then
  # Sizes while the server still runs (a stopped server leaves its WAL).
  echo "sqlite files after the run: database $(stat -c %s "$tmp/guardian.sqlite3") bytes, WAL $(stat -c %s "$tmp/guardian.sqlite3-wal" 2>/dev/null || echo 0) bytes"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
