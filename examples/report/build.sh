#!/usr/bin/env bash
# Rebuilds examples/report/bank, the bank `mnemo report` is tested on:
# the bundled batch through the gate (phase 2), then a UI phase whose
# summary holds HTML (phase 3), with a total budget small enough that
# phase 2 overruns and C7 archives the LOW entry.
set -euo pipefail
cd "$(dirname "$0")"
rm -rf bank
mnemo --config mnemo.toml --bank bank gate --phase 2 --from hermes --to aphrodite --date 2026-11-30 ../phase-batch.md
mnemo --config mnemo.toml --bank bank gate --phase 3 --from aphrodite --to themis --date 2026-12-01 phase3-ui.md
rm -f bank/.tmp/compress.lock
