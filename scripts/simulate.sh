#!/usr/bin/env bash
# The engine simulation over many seeds (CI runs 300): scripts/simulate.sh [SEEDS] [FIRST_SEED]
# prints every failing seed with the invariant it broke; replay one exactly with
#   SIM_FIRST_SEED=<seed> SIM_SEEDS=1 SIM_VERBOSE=1 cargo test -p compactor --test simulation -- --nocapture
set -euo pipefail
cd "$(dirname "$0")/.."
seeds="${1:-10000}"
first="${2:-1}"
SIM_SEEDS="$seeds" SIM_FIRST_SEED="$first" \
  cargo test --release -p compactor --test simulation every_seed -- --nocapture 2>&1 \
  | grep -E "simulation seed|simulated|failing seeds|test result"
