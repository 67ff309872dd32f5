#!/usr/bin/env bash
# Produce and consume MiB/s over TLS and SASL_SSL (SCRAM-SHA-512) against plaintext, our broker and
# Apache Kafka side by side (see bench/tls.py). Knobs: BENCH_TLS_RECORDS, BENCH_TLS_PARTITIONS, BENCH_BROKERS.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

scripts/kafka-reference.sh install
if ! .venv/bin/python -c "import confluent_kafka" 2>/dev/null; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "confluent-kafka==2.*"
fi
cargo build --release -p broker -p compactor

exec .venv/bin/python bench/tls.py "$@"
