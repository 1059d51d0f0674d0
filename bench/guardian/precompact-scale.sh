#!/usr/bin/env bash
# preCompact decision time at 100 vs 100,000 recorded steps on each store
# (memory, SQLite, PostgreSQL when MNEMO_TEST_POSTGRES_URL or PG_URL is set):
# the indexed decision and the full scan it replaced; medians and the ratio,
# the two sizes measured in turn (interleaved).
# Usage: bench/guardian/precompact-scale.sh [path/to/precompact_scale]
#   (RUNS=200, STORES=memory,sqlite,postgres). Without a path it builds
#   `--profile measure` (release + thin LTO; never `--release` on the shared
#   machine) and runs target/measure/examples/precompact_scale.
# Target (issue 16): indexed ratio <= 2.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${1:-}"
if [ -z "$bin" ]; then
  nice cargo build --quiet --profile measure -p mnemo-guardian-store --example precompact_scale
  bin=target/measure/examples/precompact_scale
fi
echo "binary: $bin; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
