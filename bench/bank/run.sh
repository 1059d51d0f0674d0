#!/usr/bin/env sh
# Gate latency on banks of 1,000, 10,000 and 100,000 entries (release build).
# Usage: bench/bank/run.sh [N…] [--runs R]
set -eu
cd "$(dirname "$0")/../.."
exec cargo run --quiet --release -p mnemo-bank --example gate_bench -- "$@"
