#!/usr/bin/env bash
# Prints the gate quality report for both halves of bench/quality and for
# Pantheon's first-80-characters baseline. MNEMO_QUALITY_VERBOSE=1 also
# lists every lost fact and readability defect; MNEMO_QUALITY_HALF=tuning
# runs the tuning half only (judge a change on it, never on held-out).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo test --locked --release -q -p mnemo-cli --test quality \
  both_halves_stay_above_the_committed_thresholds -- --nocapture 2>&1 |
  grep -E '^(mnemo|baseline),|^  (lost|defect) '
