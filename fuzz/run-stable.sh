#!/usr/bin/env bash
# Coverage-guided fuzzing on a stable toolchain: libFuzzer with SanitizerCoverage
# instrumentation (the flags cargo-fuzz passes), without AddressSanitizer (which
# needs nightly; the code under test has no `unsafe`, so what we hunt is panics,
# overflows and unbounded allocation). Debug assertions and overflow checks on.
# Usage: fuzz/run-stable.sh [seconds per target] [target ...]
set -euo pipefail
cd "$(dirname "$0")"
secs="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(guard_handle guard_frame client_frame parse_summary parse_config scrub)
fi
triple="$(rustc -vV | sed -n 's/^host: //p')"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target-stable}"
# --target keeps the instrumentation out of build scripts.
RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks" \
  cargo build --release --target "$triple" --bins
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  echo "== $t (${secs}s)"
  "$CARGO_TARGET_DIR/$triple/release/$t" "corpus/$t" -max_total_time="$secs" \
    -artifact_prefix="artifacts/$t/" -print_final_stats=1 2>&1 | grep -E "^(Done|stat::number_of_executed_units|stat::peak_rss_mb)|ERROR|panicked" || true
done
