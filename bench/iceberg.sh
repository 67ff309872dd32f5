#!/usr/bin/env bash
# Iceberg tables benchmark: compaction with tables on vs off (same data, alternating, medians),
# the commit's latency, bytes written to object storage per GiB produced, a DuckDB scan of the
# table vs the same rows exported as plain Parquet, and the table's freshness lag at a steady
# produce rate with default compaction settings. Prints Markdown (see bench/iceberg.py).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
scripts/install-test-deps.sh >/dev/null
cargo build --release -p broker -p compactor
exec .venv/bin/python bench/iceberg.py "$@"
