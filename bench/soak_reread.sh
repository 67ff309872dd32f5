#!/usr/bin/env bash
# Soak (not a CI test): re-read a multi-GiB log SOAK_PASSES times on one broker, printing its RSS
# after each pass. See bench/soak_reread.py for the knobs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/kafka-reference.sh install
cargo build --release -p broker -p compactor
exec .venv/bin/python bench/soak_reread.py "$@"
