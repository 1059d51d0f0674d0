#!/usr/bin/env sh
# Gate latency on banks of 1,000, 10,000 and 100,000 entries (release build).
# Usage: bench/bank/run.sh [BINARY] [N…] [--runs R] [--log-mb M]
#   BINARY: a prebuilt gate_bench (for example one built with
#   `cargo build --profile measure -p mnemo-bank --example gate_bench`, at
#   target/measure/examples/gate_bench); without it the release build is run.
set -eu
cd "$(dirname "$0")/../.."
if [ $# -gt 0 ] && [ -f "$1" ] && [ -x "$1" ]; then
  bin=$1
  shift
  exec "$bin" "$@"
fi
exec cargo run --quiet --release -p mnemo-bank --example gate_bench -- "$@"
