#!/usr/bin/env bash
# Compaction benchmark: produce N MiB (BENCH_COMPACTION_MIB, default 512) to a release broker with
# in-process compaction off, time `compactor --once`, then consume everything from the WAL and from
# Parquet with the same client. Prints a Markdown table (see bench/compaction.py).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if ! .venv/bin/python -c "import confluent_kafka" 2>/dev/null; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "confluent-kafka==2.*"
fi
cargo build --release -p broker -p compactor

exec .venv/bin/python bench/compaction.py "$@"
