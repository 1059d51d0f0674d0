#!/usr/bin/env bash
# Prints the gate quality report for both halves of bench/quality and for
# Pantheon's first-80-characters baseline. MNEMO_QUALITY_VERBOSE=1 also
# lists every lost fact and readability defect.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo test --locked --release -q -p mnemo-cli --test quality \
  both_halves_stay_above_the_committed_thresholds -- --nocapture 2>&1 |
  grep -E '^(mnemo|baseline),|^  (lost|defect) '
