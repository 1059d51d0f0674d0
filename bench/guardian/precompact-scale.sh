#!/usr/bin/env bash
# preCompact decision time at 100 vs 100,000 recorded steps on each store
# (memory, SQLite, PostgreSQL when MNEMO_TEST_POSTGRES_URL or PG_URL is set):
# the indexed decision and the full scan it replaced; medians and the ratio.
# Usage: bench/guardian/precompact-scale.sh   (RUNS=200, STORES=memory,sqlite,postgres)
# Target (issue 16): indexed ratio <= 2.
set -euo pipefail
cd "$(dirname "$0")/../.."
nice cargo run --quiet --release -p mnemo-guardian-store --example precompact_scale
