#!/usr/bin/env bash
# Produce on the local-folder store, p50/p99 at a fixed rate and broker CPU per GiB at max rate:
# Kafka, an earlier build of ours (BENCH_OLD_BROKER_BIN) and this build, interleaved round by
# round (see bench/local_store.py). Knobs: BENCH_FIXED_RATE, BENCH_LATENCY_S, BENCH_RECORDS,
# BENCH_ROUNDS, BENCH_OLD_BROKER_BIN.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

scripts/kafka-reference.sh install
if ! .venv/bin/python -c "import confluent_kafka" 2>/dev/null; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "confluent-kafka==2.*"
fi
cargo build --release -p broker -p compactor

exec .venv/bin/python bench/local_store.py "$@"
